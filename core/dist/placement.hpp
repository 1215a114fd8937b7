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
// the CPU, the same on every rank (ranks that would differ: an error on every rank);
// mpi: always CPU; nccl: a GPU is required. Collective (the agreement, NCCL bootstrap).
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
// Collective: --dist.backend auto decides per rank, and a node whose GPUs are gone (a driver
// fault, a container without them) put its ranks on MPI while the others built NCCL, whose
// collectives never matched. Throws on every rank when the ranks' NCCL (this rank: true)
// differ; a rank without a GPU names its host.
void agree_backend(const MpiRuntime& mpi, bool nccl);
// The warning place_run logs when --dist.backend auto finds no usable GPU although
// CUDA_VISIBLE_DEVICES (VISIBLE; nullptr: unset) names some (a node's driver gone, a
// container without them), "" otherwise (unset, empty, Slurm's NoDevFiles, -1).
std::string unusable_gpu_warning(Backend backend, bool cuda_available, const char* visible, const std::string& host);

}  // namespace lockstep
