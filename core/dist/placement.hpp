// placement: where a run computes and how its ranks talk, chosen once at start: the
// device and the communicator (from --dist.backend and what this node has).
#pragma once

#include <memory>
#include <string>

#include <torch/types.h>

#include "core/dist/communicator.hpp"
#include "core/config/config.hpp"

namespace lockstep {

class MpiRuntime;

struct Placement {
  torch::Device device = torch::kCPU;
  std::unique_ptr<Communicator> comm;
  bool overlap = true;  // reduce buckets during backward (resolved --dist.overlap)
};

// auto: NCCL on this rank's GPU when CUDA is available and NCCL compiled in, else MPI on
// the CPU; mpi: always CPU; nccl: a GPU is required. Collective (NCCL bootstrap).
// --dist.overlap auto (= true): buckets of 256 KiB and more are reduced during backward
// (NCCL: on a side stream; MPI: on the communication thread), smaller ones and whatever
// is still queued at the end of backward by the training thread itself (communicator.hpp).
// Measured at 2 ranks x 1 core: 2184-2419 samples/s with overlap vs 2034-2420 without,
// exposed communication 0.3-2.6% vs 1.7-4.4% of step time. (Before the training thread
// ran queued reductions itself, the thread hand-offs made overlap lose on one core: 1841
// vs 2026.)
Placement place_run(const Config& cfg, const MpiRuntime& mpi);

// The warning place_run logs when this build (without CUDA/NCCL) trains on the CPU of a
// node whose GPUs torch sees, "" when there is nothing to say: a build with NCCL, no GPU,
// or --dist.backend mpi (the CPU is meant).
std::string cpu_build_warning(Backend backend, int visible_gpus, bool nccl_built, const std::string& host);

}  // namespace lockstep
