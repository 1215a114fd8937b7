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
};

// auto: NCCL on this rank's GPU when CUDA is available and NCCL compiled in, else MPI on
// the CPU; mpi: always CPU; nccl: a GPU is required. Collective (NCCL bootstrap).
Placement place_run(const Config& cfg, const MpiRuntime& mpi);

// The checkpoint to resume from, "" for a fresh start. Collective: rank 0 resolves
// --resume (and refuses --resume none over existing checkpoints), everyone gets its path.
std::string agree_resume_path(const Config& cfg, const MpiRuntime& mpi);

std::string checkpoint_dir(const Config& cfg);

}  // namespace lockstep
