// nccl_bootstrap: see nccl_bootstrap.hpp.
#include "core/dist/nccl_bootstrap.hpp"

#include <cstring>
#include <map>

#include "core/base/error.hpp"
#include "core/dist/checks.hpp"
#include "core/dist/mpi_runtime.hpp"

namespace lockstep {

std::string shared_gpu_problem(const std::vector<std::string>& hosts, const std::vector<int>& nodes,
                               const std::vector<std::string>& gpu_ids, const std::vector<int>& devices) {
  std::map<std::pair<int, std::string>, size_t> first;  // node + GPU -> lowest rank using it
  for (size_t r = 0; r < hosts.size() && r < nodes.size() && r < gpu_ids.size(); ++r) {
    const auto [it, fresh] = first.emplace(std::make_pair(nodes[r], gpu_ids[r]), r);
    if (fresh) continue;
    const size_t a = it->second;
    return "ranks " + std::to_string(a) + " and " + std::to_string(r) + " share GPU " +
           std::to_string(a < devices.size() ? devices[a] : -1) + " (PCI " + gpu_ids[r] + ") on host " + hosts[r] +
           ": NCCL allows one rank per GPU; start as many ranks per node as it has GPUs "
           "(srun --ntasks-per-node, --gpus-per-node) or give each rank its own CUDA_VISIBLE_DEVICES";
  }
  return "";
}

void check_gpu_identities(const MpiRuntime& mpi, int device, const std::string& gpu_id) {
  constexpr size_t kWidth = 64;
  std::vector<uint8_t> mine(kWidth + sizeof(int), 0);
  std::memcpy(mine.data(), gpu_id.data(), std::min(gpu_id.size(), kWidth - 1));
  std::memcpy(mine.data() + kWidth, &device, sizeof device);
  const std::vector<uint8_t> all = mpi.gather_bytes(mine, 0);
  std::string problem;
  if (mpi.rank() == 0) {
    std::vector<std::string> ids;
    std::vector<int> devices;
    for (size_t off = 0; off + mine.size() <= all.size(); off += mine.size()) {
      ids.emplace_back(reinterpret_cast<const char*>(&all[off]));
      int d = 0;
      std::memcpy(&d, &all[off + kWidth], sizeof d);
      devices.push_back(d);
    }
    problem = shared_gpu_problem(mpi.hosts(), mpi.nodes(), ids, devices);
  }
  problem = mpi.broadcast_string(problem, 0);
  if (!problem.empty()) throw Error(problem);
}

}  // namespace lockstep

#ifdef LOCKSTEP_HAVE_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>

namespace lockstep {

bool nccl_compiled() { return true; }

NcclIdBytes exchange_nccl_id(const MpiRuntime& mpi) {
  static_assert(sizeof(ncclUniqueId) == kNcclIdBytes, "ncclUniqueId is 128 bytes");
  NcclIdBytes bytes{};
  // Rank 0's failure (a bad NCCL_SOCKET_IFNAME, no usable interface) reaches every rank as
  // the same error: no rank is left waiting in the broadcast for an ID that never comes.
  std::string failure;
  if (mpi.rank() == 0) {
    try {
      ncclUniqueId id;
      NCCL_CHECK(ncclGetUniqueId(&id));
      std::memcpy(bytes.data(), &id, sizeof id);
    } catch (const Error& e) {
      failure = e.what();
    }
  }
  failure = mpi.broadcast_string(failure, 0);
  if (!failure.empty())
    throw Error("rank 0 could not create the NCCL unique ID: " + failure +
                " (NCCL picks its bootstrap interface from NCCL_SOCKET_IFNAME: `lockstep doctor` checks it)");
  mpi.broadcast_bytes(bytes.data(), bytes.size(), 0);
  return bytes;
}

void check_one_rank_per_gpu(const MpiRuntime& mpi, int device) {
  char bus[64] = {0};
  CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus - 1, device));
  check_gpu_identities(mpi, device, bus);
}

}  // namespace lockstep

#else  // built without CUDA/NCCL

namespace lockstep {

bool nccl_compiled() { return false; }

NcclIdBytes exchange_nccl_id(const MpiRuntime&) {
  throw Error("this lockstep was built without NCCL (rebuild with CUDA and NCCL available)");
}

void check_one_rank_per_gpu(const MpiRuntime&, int) {}

}  // namespace lockstep
#endif
