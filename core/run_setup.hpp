// run_setup: the pieces of a run that are chosen once at start: the device and the
// communicator (from --dist.backend and what this node has), and the checkpoint to
// resume from (rank 0 decides; everyone follows).
#pragma once

#include <memory>
#include <string>

#include <torch/types.h>

#include "core/communicator.hpp"
#include "core/config.hpp"

namespace lockstep {

class MpiRuntime;

struct Placement {
  torch::Device device = torch::kCPU;
  std::unique_ptr<Communicator> comm;
  bool overlap = true;  // reduce buckets during backward (resolved --dist.overlap)
};

// auto: NCCL on this rank's GPU when CUDA is available and NCCL compiled in, else MPI on
// the CPU; mpi: always CPU; nccl: a GPU is required. Collective (NCCL bootstrap).
// --dist.overlap auto: on for NCCL (a side stream costs the GPU nothing); for MPI only when
// the rank's CPU affinity holds more cores than its intra-op threads. Open MPI's
// shared-memory all-reduce busy-polls, so a communication thread sharing the compute core
// slows backward more than it hides (measured: 1841 vs 2026 samples/s at 1 core per rank).
Placement place_run(const Config& cfg, const MpiRuntime& mpi);

// The checkpoint to resume from, "" for a fresh start. Collective: rank 0 resolves
// --resume (and refuses --resume none over existing checkpoints), everyone gets its path.
std::string agree_resume_path(const Config& cfg, const MpiRuntime& mpi);

std::string checkpoint_dir(const Config& cfg);

}  // namespace lockstep
