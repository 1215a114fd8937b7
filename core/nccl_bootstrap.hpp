// nccl_bootstrap: NCCL communicator set-up over MPI, and the NCCL backend.
//
// Bootstrap protocol (every rank, in this order):
// 1. rank 0 calls ncclGetUniqueId (works without a GPU);
// 2. MPI_Bcast carries the 128-byte ncclUniqueId to every rank;
// 3. each rank selects its GPU, cudaSetDevice(local_rank % device_count);
// 4. each rank calls ncclCommInitRank(world, id, rank) on its own stream.
// Steps 1-2 are exchange_nccl_id() and are tested in CI at 2 ranks; 3-4 need a GPU.
// NcclCommunicator is destroyed explicitly (destroy()/abort()), never in a destructor
// racing CUDA's own shutdown; its destructor only destroys a communicator still alive.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "core/communicator.hpp"

namespace lockstep {

inline constexpr size_t kNcclIdBytes = 128;
using NcclIdBytes = std::array<char, kNcclIdBytes>;

bool nccl_compiled();  // this build has the NCCL backend
// Steps 1-2 of the bootstrap. Collective over MPI.
NcclIdBytes exchange_nccl_id(const MpiRuntime& mpi);
// Steps 1-4: a ready NCCL communicator on this rank's GPU. Collective.
std::unique_ptr<Communicator> make_nccl_communicator(const MpiRuntime& mpi, int device);
// Orders the NCCL stream after COMPUTE_STREAM (a cudaStream_t) before each reduction and
// the compute stream after the reduction.
void nccl_set_compute_stream(Communicator& comm, void* compute_stream);

}  // namespace lockstep
