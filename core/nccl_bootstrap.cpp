// nccl_bootstrap: see nccl_bootstrap.hpp.
#include "core/nccl_bootstrap.hpp"

#include "core/error.hpp"
#include "core/mpi_runtime.hpp"
#include "core/watchdog.hpp"

#include <cstring>
#include <map>

namespace lockstep {

std::string shared_gpu_problem(const std::vector<std::string>& hosts, const std::vector<std::string>& gpu_ids,
                               const std::vector<int>& devices) {
  std::map<std::string, size_t> first;  // host + GPU -> lowest rank using it
  for (size_t r = 0; r < hosts.size() && r < gpu_ids.size(); ++r) {
    const auto [it, fresh] = first.emplace(hosts[r] + "|" + gpu_ids[r], r);
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
    problem = shared_gpu_problem(mpi.hosts(), ids, devices);
  }
  problem = mpi.broadcast_string(problem, 0);
  if (!problem.empty()) throw Error(problem);
}

}  // namespace lockstep

#ifdef LOCKSTEP_HAVE_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>

#define NCCL_CHECK(call)                                                                  \
  do {                                                                                    \
    const ncclResult_t nccl_rc_ = (call);                                                 \
    if (nccl_rc_ != ncclSuccess)                                                          \
      ::lockstep::throw_at(std::string("NCCL call " #call " failed: ") +                  \
                               ncclGetErrorString(nccl_rc_), __FILE__, __LINE__);         \
  } while (0)

#define CUDA_CHECK(call)                                                                  \
  do {                                                                                    \
    const cudaError_t cuda_rc_ = (call);                                                  \
    if (cuda_rc_ != cudaSuccess)                                                          \
      ::lockstep::throw_at(std::string("CUDA call " #call " failed: ") +                  \
                               cudaGetErrorString(cuda_rc_), __FILE__, __LINE__);         \
  } while (0)

namespace lockstep {
namespace {

// RAII for the two events that order the NCCL stream against the compute stream.
class CudaEvent {
 public:
  CudaEvent() { CUDA_CHECK(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming)); }
  ~CudaEvent() { cudaEventDestroy(e_); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_{};
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(const MpiRuntime& mpi, int device) : mpi_(mpi), rank_(mpi.rank()), size_(mpi.size()) {
    check_one_rank_per_gpu(mpi, device);
    const NcclIdBytes bytes = exchange_nccl_id(mpi);
    ncclUniqueId id;
    std::memcpy(&id, bytes.data(), sizeof id);
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    {
      Watchdog::Scope watch(mpi.watchdog(), "ncclCommInitRank");
      NCCL_CHECK(ncclCommInitRank(&comm_, size_, id, rank_));
    }
    // On a watchdog timeout or an error elsewhere, abort NCCL before MPI_Abort so no
    // kernel keeps spinning on a peer that is gone. Removed before this object goes away.
    hook_ = mpi.add_abort_hook([this] {
      if (comm_) ncclCommAbort(comm_);
      comm_ = nullptr;
    });
    ready_ = std::make_unique<CudaEvent>();
    for (auto& e : done_) e = std::make_unique<CudaEvent>();
  }

  // Reached on the normal path only after destroy(); when a run unwinds after an error,
  // abort: ncclCommDestroy would wait for peers that may be dead.
  ~NcclCommunicator() override {
    detach();
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    if (stream_) cudaStreamDestroy(stream_);
  }

  void destroy() override {
    if (!comm_ && !stream_) return;
    detach();
    {
      Watchdog::Scope watch(mpi_.watchdog(), "draining the NCCL stream at shutdown");
      CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
    {
      Watchdog::Scope watch(mpi_.watchdog(), "ncclCommDestroy");
      NCCL_CHECK(ncclCommDestroy(comm_));
    }
    comm_ = nullptr;
    CUDA_CHECK(cudaStreamDestroy(stream_));
    stream_ = nullptr;
  }

  std::string name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void set_compute_stream(cudaStream_t s) { compute_ = s; }

  // Enqueued on the NCCL stream after the compute stream's work so far; the compute
  // stream waits for it. The host does not block: the watchdog polls the op's event.
  void start_allreduce(float* data, size_t n, const std::string& what) override {
    CUDA_CHECK(cudaEventRecord(ready_->get(), compute_));
    CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_->get(), 0));
    NCCL_CHECK(ncclAllReduce(data, data, n, ncclFloat32, ncclSum, comm_, stream_));
    finish_op("ncclAllReduce of " + what);
  }

  void wait_all() override {}  // ordering is on the device (finish_op); nothing to wait for on the host

  void broadcast(float* data, size_t n, int root) override {
    CUDA_CHECK(cudaEventRecord(ready_->get(), compute_));
    CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_->get(), 0));
    NCCL_CHECK(ncclBroadcast(data, data, n, ncclFloat32, root, comm_, stream_));
    finish_op("ncclBroadcast");
  }

 private:
  // No poll or abort hook of this object runs after detach() returns.
  void detach() {
    if (Watchdog* w = mpi_.watchdog()) w->forget(this);
    if (hook_) mpi_.remove_abort_hook(hook_);
    hook_ = 0;
  }

  void finish_op(const std::string& what) {
    cudaEvent_t done = done_[ops_++ % done_.size()]->get();
    CUDA_CHECK(cudaEventRecord(done, stream_));
    CUDA_CHECK(cudaStreamWaitEvent(compute_, done, 0));
    Watchdog* w = mpi_.watchdog();
    if (!w) return;
    ncclComm_t comm = comm_;
    w->watch(what, [done, comm] {
      const cudaError_t rc = cudaEventQuery(done);
      if (rc == cudaSuccess) return Watchdog::Poll::done();
      if (rc != cudaErrorNotReady) return Watchdog::Poll::failed(std::string("CUDA error ") + cudaGetErrorString(rc));
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(comm, &async) == ncclSuccess && async != ncclSuccess && async != ncclInProgress)
        return Watchdog::Poll::failed(std::string("NCCL asynchronous error: ") + ncclGetErrorString(async));
      return Watchdog::Poll::pending();
    }, this);
  }

  const MpiRuntime& mpi_;
  int rank_, size_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaStream_t compute_ = nullptr;  // the legacy default stream until the trainer sets one
  uint64_t hook_ = 0;
  std::unique_ptr<CudaEvent> ready_;
  // A ring: an op's event is re-recorded 64 ops later; by then the watchdog has seen the
  // op complete (ops complete in order), or it polls the newer op, which is as good.
  std::array<std::unique_ptr<CudaEvent>, 64> done_;
  uint64_t ops_ = 0;
};

}  // namespace

bool nccl_compiled() { return true; }

NcclIdBytes exchange_nccl_id(const MpiRuntime& mpi) {
  static_assert(sizeof(ncclUniqueId) == kNcclIdBytes, "ncclUniqueId is 128 bytes");
  NcclIdBytes bytes{};
  if (mpi.rank() == 0) {
    ncclUniqueId id;
    NCCL_CHECK(ncclGetUniqueId(&id));
    std::memcpy(bytes.data(), &id, sizeof id);
  }
  mpi.broadcast_bytes(bytes.data(), bytes.size(), 0);
  return bytes;
}

std::unique_ptr<Communicator> make_nccl_communicator(const MpiRuntime& mpi, int device) {
  return std::make_unique<NcclCommunicator>(mpi, device);
}

void check_one_rank_per_gpu(const MpiRuntime& mpi, int device) {
  char bus[64] = {0};
  CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus - 1, device));
  check_gpu_identities(mpi, device, bus);
}

void nccl_set_compute_stream(Communicator& comm, void* compute_stream) {
  auto* nccl = dynamic_cast<NcclCommunicator*>(&comm);
  LOCKSTEP_REQUIRE(nccl != nullptr, "nccl_set_compute_stream on a " + comm.name() + " communicator");
  nccl->set_compute_stream(static_cast<cudaStream_t>(compute_stream));
}

}  // namespace lockstep

#else  // built without CUDA/NCCL: the NCCL backend reports itself missing.

namespace lockstep {

bool nccl_compiled() { return false; }

NcclIdBytes exchange_nccl_id(const MpiRuntime&) {
  throw Error("this lockstep was built without NCCL (rebuild with CUDA and NCCL available)");
}

std::unique_ptr<Communicator> make_nccl_communicator(const MpiRuntime&, int) {
  throw Error("this lockstep was built without NCCL (rebuild with CUDA and NCCL available)");
}

void nccl_set_compute_stream(Communicator&, void*) {
  throw Error("this lockstep was built without NCCL");
}

void check_one_rank_per_gpu(const MpiRuntime&, int) {}

}  // namespace lockstep
#endif
