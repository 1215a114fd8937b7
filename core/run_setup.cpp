// run_setup: see run_setup.hpp.
#include "core/run_setup.hpp"

#include <torch/cuda.h>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/mpi_runtime.hpp"
#include "core/nccl_bootstrap.hpp"

#ifdef LOCKSTEP_HAVE_NCCL
#include <c10/cuda/CUDAStream.h>
#endif

namespace lockstep {

Placement place_run(const Config& cfg, const MpiRuntime& mpi) {
  Placement p;
  const bool gpu = torch::cuda::is_available();
  const bool want_nccl = cfg.backend == "nccl" || (cfg.backend == "auto" && gpu && nccl_compiled());
  if (!want_nccl) {
    p.comm = std::make_unique<MpiCommunicator>(mpi);
    p.overlap = cfg.overlap != "false";
    p.comm->set_background(p.overlap);  // off: every reduction runs on the training thread
    return p;
  }
  p.overlap = cfg.overlap != "false";
  LOCKSTEP_REQUIRE(gpu, "--dist.backend nccl needs a CUDA GPU, and none is visible on " + mpi.host());
  const int device = mpi.local_rank() % static_cast<int>(torch::cuda::device_count());
  p.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(device));
  p.comm = make_nccl_communicator(mpi, device);
#ifdef LOCKSTEP_HAVE_NCCL
  nccl_set_compute_stream(*p.comm, c10::cuda::getCurrentCUDAStream(p.device.index()).stream());
#endif
  return p;
}

}  // namespace lockstep
