// placement: see placement.hpp.
#include "core/dist/placement.hpp"

#include <fmt/format.h>
#include <torch/cuda.h>

#include "core/base/env.hpp"
#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/dist/mpi_communicator.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/dist/nccl_bootstrap.hpp"
#include "core/dist/nccl_communicator.hpp"


namespace lockstep {
namespace {

std::string visible_text() {
  const char* v = env::get(env::kCudaVisibleDevices);
  return v == nullptr ? "unset" : *v == '\0' ? "''" : v;
}

}  // namespace

Placement place_run(const Config& cfg, const MpiRuntime& mpi) {
  Placement p;
  const bool gpu = torch::cuda::is_available();
  const bool want_nccl = cfg.backend == Backend::kNccl || (cfg.backend == Backend::kAuto && gpu && nccl_compiled());
  if (cfg.backend == Backend::kAuto) agree_backend(mpi, want_nccl);
  if (!want_nccl) {
    std::string warning = cpu_build_warning(cfg.backend, gpu ? static_cast<int>(torch::cuda::device_count()) : 0,
                                            nccl_compiled(), mpi.host());
    if (warning.empty()) warning = unusable_gpu_warning(cfg.backend, gpu, env::get(env::kCudaVisibleDevices), mpi.host());
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

void agree_backend(const MpiRuntime& mpi, bool nccl) {
  if (mpi.size() == 1) return;
  double mixed[2] = {nccl ? 1.0 : 0.0, nccl ? 0.0 : 1.0};
  mpi.allreduce_max(mixed, 2);
  if (mixed[0] == 1.0 && mixed[1] == 1.0)
    throw Error(nccl ? "--dist.backend auto: some ranks have no usable GPU (each names its host): every rank trains on "
                       "one backend; fix or exclude those nodes, or pass --dist.backend mpi"
                     : fmt::format("--dist.backend auto: no usable CUDA GPU on {} (CUDA_VISIBLE_DEVICES={}), but other "
                                   "ranks have one: every rank trains on one backend",
                                   mpi.host(), visible_text()));
}

std::string unusable_gpu_warning(Backend backend, bool cuda_available, const char* visible, const std::string& host) {
  if (backend != Backend::kAuto || cuda_available || visible == nullptr) return "";
  const std::string v = visible;
  if (v.empty() || v == "NoDevFiles" || v == "-1") return "";  // no GPU given: Slurm's marker, or hidden on purpose
  return fmt::format("GPUs are given to this job (CUDA_VISIBLE_DEVICES={}) but CUDA finds none on {} (no driver, a "
                     "container started without them, IDs that name no device), so it trains on the CPU: check "
                     "nvidia-smi on that node, or pass --dist.backend mpi to say the CPU is meant",
                     v, host);
}

}  // namespace lockstep
