// placement: see placement.hpp.
#include "core/dist/placement.hpp"

#include <fmt/format.h>
#include <torch/cuda.h>

#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/dist/mpi_communicator.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/dist/nccl_bootstrap.hpp"
#include "core/dist/nccl_communicator.hpp"


namespace lockstep {

Placement place_run(const Config& cfg, const MpiRuntime& mpi) {
  Placement p;
  const bool gpu = torch::cuda::is_available();
  const bool want_nccl = cfg.backend == Backend::kNccl || (cfg.backend == Backend::kAuto && gpu && nccl_compiled());
  if (!want_nccl) {
    const std::string warning = cpu_build_warning(cfg.backend, gpu ? static_cast<int>(torch::cuda::device_count()) : 0,
                                                  nccl_compiled(), mpi.host());
    if (!warning.empty()) log::warn0(warning);
    p.comm = std::make_unique<MpiCommunicator>(mpi);
    p.overlap = cfg.overlap != Overlap::kOff;
    p.comm->set_background(p.overlap);  // off: every reduction runs on the training thread
    return p;
  }
  p.overlap = cfg.overlap != Overlap::kOff;
  LOCKSTEP_REQUIRE(gpu, "--dist.backend nccl needs a CUDA GPU, and none is visible on " + mpi.host());
  const int device = mpi.local_rank() % static_cast<int>(torch::cuda::device_count());
  p.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(device));
  p.comm = make_nccl_communicator(mpi, device);
  return p;
}

std::string cpu_build_warning(Backend backend, int visible_gpus, bool nccl_built, const std::string& host) {
  if (visible_gpus <= 0 || nccl_built || backend != Backend::kAuto) return "";
  return fmt::format("this lockstep was built without CUDA/NCCL, so it trains on the CPU although {} GPU(s) are visible "
                     "on {}: rebuild it where CMake finds the CUDA toolkit and NCCL (it prints \"lockstep: NCCL backend "
                     "ON\"), or pass --dist.backend mpi to say the CPU is meant",
                     visible_gpus, host);
}

}  // namespace lockstep
