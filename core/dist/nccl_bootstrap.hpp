// nccl_bootstrap: what an NCCL communicator needs before it exists — the unique ID from
// rank 0 over MPI, and one GPU per rank. (The communicator: nccl_communicator.hpp.)
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
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lockstep {

class MpiRuntime;

inline constexpr size_t kNcclIdBytes = 128;
using NcclIdBytes = std::array<char, kNcclIdBytes>;

bool nccl_compiled();  // this build has the NCCL backend
// Steps 1-2 of the bootstrap. Collective over MPI.
NcclIdBytes exchange_nccl_id(const MpiRuntime& mpi);
// The problem line when two ranks share a GPU ("" when none do): HOSTS, NODES (MpiRuntime's
// node of each rank: host names can repeat across nodes), GPU_IDS and DEVICES are indexed by
// rank. Pure; used by the NCCL bootstrap.
std::string shared_gpu_problem(const std::vector<std::string>& hosts, const std::vector<int>& nodes,
                               const std::vector<std::string>& gpu_ids,
                               const std::vector<int>& devices);
// Collective: throws Error naming the ranks when two ranks would use one GPU. DEVICE is
// this rank's CUDA device index.
void check_one_rank_per_gpu(const MpiRuntime& mpi, int device);
// The same decision from given identities (GPU_ID: e.g. the PCI bus id): every rank's
// (host, GPU_ID) goes to rank 0, which decides; every rank throws the same error.
// Collective; testable without a GPU.
void check_gpu_identities(const MpiRuntime& mpi, int device, const std::string& gpu_id);

}  // namespace lockstep
