// nccl_bootstrap: see nccl_bootstrap.hpp.
#include "core/nccl_bootstrap.hpp"

#include "core/error.hpp"
#include "core/mpi_runtime.hpp"
#include "core/watchdog.hpp"

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
    // kernel keeps spinning on a peer that is gone.
    mpi.add_abort_hook([this] {
      if (comm_) ncclCommAbort(comm_);
      comm_ = nullptr;
    });
    ready_ = std::make_unique<CudaEvent>();
    for (auto& e : done_) e = std::make_unique<CudaEvent>();
  }
  ~NcclCommunicator() override {
    if (comm_) ncclCommDestroy(comm_);
    if (stream_) cudaStreamDestroy(stream_);
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
  void finish_op(const std::string& what) {
    cudaEvent_t done = done_[ops_++ % done_.size()]->get();
    CUDA_CHECK(cudaEventRecord(done, stream_));
    CUDA_CHECK(cudaStreamWaitEvent(compute_, done, 0));
    if (Watchdog* w = mpi_.watchdog()) w->watch(what, [done] { return cudaEventQuery(done) != cudaErrorNotReady; });
  }

  const MpiRuntime& mpi_;
  int rank_, size_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaStream_t compute_ = nullptr;  // the legacy default stream until the trainer sets one
  std::unique_ptr<CudaEvent> ready_;
  std::array<std::unique_ptr<CudaEvent>, 64> done_;  // a ring: an op's event outlives its watch
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

}  // namespace lockstep
#endif
