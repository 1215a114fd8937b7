// nccl_bootstrap: NCCL communicator set-up over MPI, and the NCCL backend.
//
// Bootstrap protocol (every rank, in this order):
// 1. rank 0 calls ncclGetUniqueId (works without a GPU);
// 2. MPI_Bcast carries the 128-byte ncclUniqueId to every rank;
// 3. each rank selects its GPU, cudaSetDevice(local_rank % device_count);
// 4. each rank calls ncclCommInitRank(world, id, rank) on its own stream.
// Steps 1-2 are exchange_nccl_id() and are tested in CI at 2 ranks; 3-4 need a GPU.
// Before step 3 every rank's GPU identity (host + PCI bus id) is gathered: two ranks on
// one GPU are refused by name ("ranks 0 and 1 share GPU 0 ... on host n1"), not left to
// NCCL's bare "invalid usage".
//
// Lifetime (the NCCL communicator):
// - it registers an abort hook with the runtime (ncclCommAbort before MPI_Abort) and
//   watchdog polls of its operations (CUDA event state, ncclCommGetAsyncError);
// - destroy(), on the normal path, drains its stream and calls ncclCommDestroy, each
//   under the watchdog; it first removes its polls and its hook;
// - the destructor, reached when a run unwinds after an error, removes them too and calls
//   ncclCommAbort (never Destroy, which waits for peers that may be gone). No hook or
//   poll ever runs on a destroyed communicator.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/communicator.hpp"

namespace lockstep {

inline constexpr size_t kNcclIdBytes = 128;
using NcclIdBytes = std::array<char, kNcclIdBytes>;

bool nccl_compiled();  // this build has the NCCL backend
// Steps 1-2 of the bootstrap. Collective over MPI.
NcclIdBytes exchange_nccl_id(const MpiRuntime& mpi);
// Steps 1-4: a ready NCCL communicator on this rank's GPU. Collective.
std::unique_ptr<Communicator> make_nccl_communicator(const MpiRuntime& mpi, int device);
// The problem line when two ranks share a GPU ("" when none do): HOSTS and GPU_IDS are
// indexed by rank. Pure; used by the NCCL bootstrap and doctor.
std::string shared_gpu_problem(const std::vector<std::string>& hosts, const std::vector<std::string>& gpu_ids,
                               const std::vector<int>& devices);
// Collective: throws Error naming the ranks when two ranks would use one GPU. DEVICE is
// this rank's CUDA device index.
void check_one_rank_per_gpu(const MpiRuntime& mpi, int device);
// The same decision from given identities (GPU_ID: e.g. the PCI bus id): every rank's
// (host, GPU_ID) goes to rank 0, which decides; every rank throws the same error.
// Collective; testable without a GPU.
void check_gpu_identities(const MpiRuntime& mpi, int device, const std::string& gpu_id);

// Orders the NCCL stream after COMPUTE_STREAM (a cudaStream_t) before each reduction and
// the compute stream after the reduction.
void nccl_set_compute_stream(Communicator& comm, void* compute_stream);

}  // namespace lockstep
