// nccl_communicator: see nccl_communicator.hpp.
#include "core/dist/nccl_communicator.hpp"

#include "core/base/error.hpp"
#include "core/dist/checks.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/dist/nccl_bootstrap.hpp"
#include "core/dist/watchdog.hpp"

#ifdef LOCKSTEP_HAVE_NCCL
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <thread>

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
  NcclCommunicator(const MpiRuntime& mpi, int device)
      : mpi_(mpi), rank_(mpi.rank()), size_(mpi.size()), device_(static_cast<c10::DeviceIndex>(device)) {
    check_one_rank_per_gpu(mpi, device);
    const NcclIdBytes bytes = exchange_nccl_id(mpi);
    ncclUniqueId id;
    std::memcpy(&id, bytes.data(), sizeof id);
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    {
      Watchdog::Scope watch(mpi.watchdog(), "ncclCommInitRank");
      ncclComm_t comm = nullptr;
      NCCL_CHECK(ncclCommInitRank(&comm, size_, id, rank_));
      comm_ = comm;
    }
    // On a watchdog timeout or an error elsewhere, abort NCCL before MPI_Abort so no
    // kernel keeps spinning on a peer that is gone. Removed before this object goes away.
    // Once a CUDA graph holds this communicator's work, ncclCommAbort may wait for that
    // graph to be destroyed, which the stuck training thread never does: then it runs on a
    // thread of its own, given a few seconds, and MPI_Abort ends the process either way.
    hook_ = mpi.add_abort_hook([this] {
      aborting_ = true;  // the training thread stops at its next operation or replay
      // No poll may read the communicator once it is aborted: forget() waits for one in
      // progress (it takes the watchdog's lock, which fire() has released when this runs on
      // the watchdog's thread).
      if (Watchdog* w = mpi_.watchdog()) w->forget(this);
      const ncclComm_t comm = comm_.exchange(nullptr);
      if (!comm) return;
      if (!captured_) {
        ncclCommAbort(comm);
        return;
      }
      auto aborted = std::make_shared<std::promise<void>>();
      std::future<void> done = aborted->get_future();
      std::thread([comm, aborted] {
        ncclCommAbort(comm);
        aborted->set_value();
      }).detach();
      done.wait_for(std::chrono::seconds(5));
    });
    ready_ = std::make_unique<CudaEvent>();
    captured_done_ = std::make_unique<CudaEvent>();
    for (auto& e : done_) e = std::make_unique<CudaEvent>();
  }

  // Reached on the normal path only after destroy(); when a run unwinds after an error,
  // abort: ncclCommDestroy would wait for peers that may be dead.
  ~NcclCommunicator() override {
    detach();
    if (const ncclComm_t comm = comm_.exchange(nullptr)) ncclCommAbort(comm);
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

  // Enqueued on the NCCL stream after the current stream's work so far. The host does not
  // block: the watchdog polls the op's event. While the current stream is capturing a CUDA
  // graph the op is captured, not run: nothing is watched (watch_queued watches replays).
  using Communicator::start_allreduce;
  void start_allreduce(void* data, size_t n, WireType type, const std::string& what) override {
    const ncclDataType_t t = type == WireType::kF32 ? ncclFloat32 : type == WireType::kBF16 ? ncclBfloat16 : ncclFloat16;
    const bool captured = begin_op();
    NCCL_CHECK(ncclAllReduce(data, data, n, t, ncclSum, comm_, stream_));
    finish_op("ncclAllReduce of " + what, captured);
  }

  // The current stream waits (on the device) for every operation started so far: the last
  // one's event, since they complete in order on the one NCCL stream. The host never waits.
  void wait_all() override {
    if (!last_done_) return;
    CUDA_CHECK(cudaStreamWaitEvent(current(), last_done_, 0));
    last_done_ = nullptr;
  }

  void watch_queued(const std::string& what) override {
    LOCKSTEP_REQUIRE(!capturing(), "watch_queued while capturing a CUDA graph: " + what);
    stop_if_aborting();  // after every replay: an aborted communicator's replays reduce nothing
    cudaEvent_t done = done_[ops_++ % done_.size()]->get();
    CUDA_CHECK(cudaEventRecord(done, current()));
    watch(done, what);
  }

  void broadcast(float* data, size_t n, int root) override {
    const bool captured = begin_op();
    NCCL_CHECK(ncclBroadcast(data, data, n, ncclFloat32, root, comm_, stream_));
    finish_op("ncclBroadcast", captured);
    wait_all();
  }

 private:
  // No poll or abort hook of this object runs after detach() returns.
  void detach() {
    if (Watchdog* w = mpi_.watchdog()) w->forget(this);
    if (hook_) mpi_.remove_abort_hook(hook_);
    hook_ = 0;
  }

  cudaStream_t current() const { return c10::cuda::getCurrentCUDAStream(device_).stream(); }

  // The NCCL stream waits for the work issued so far on the current stream.
  void after_current() {
    CUDA_CHECK(cudaEventRecord(ready_->get(), current()));
    CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_->get(), 0));
  }

  // Before each operation: stop if aborted; note a capture (before NCCL counts the graph's
  // hold on the communicator, so the abort hook knows); order NCCL's stream after the
  // current one. Whether the operation is being captured.
  bool begin_op() {
    stop_if_aborting();
    const bool captured = capturing();
    if (captured) captured_ = true;
    after_current();
    return captured;
  }

  void stop_if_aborting() const {
    if (aborting_) throw Error("the NCCL communicator was aborted (the run is stopping on every rank)");
  }

  bool capturing() const {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    CUDA_CHECK(cudaStreamIsCapturing(current(), &status));
    return status != cudaStreamCaptureStatusNone;
  }

  // While capturing, the op's event only joins NCCL's stream back into the captured step
  // (wait_all): one event of its own, never watched — re-recording one of the ring's would
  // make the watchdog's poll of an older op on it fail (an event last recorded in a
  // capture cannot be queried).
  void finish_op(const std::string& what, bool captured) {
    cudaEvent_t done = captured ? captured_done_->get() : done_[ops_++ % done_.size()]->get();
    CUDA_CHECK(cudaEventRecord(done, stream_));
    last_done_ = done;
    if (!captured) watch(done, what);
  }

  // The watchdog polls DONE (and NCCL's asynchronous error) as the operation WHAT.
  void watch(cudaEvent_t done, const std::string& what) {
    Watchdog* w = mpi_.watchdog();
    if (!w) return;
    const ncclComm_t comm = comm_;
    const std::atomic<bool>* aborting = &aborting_;  // the watch goes before this object (detach)
    w->watch(what, [done, comm, aborting] {
      const cudaError_t rc = cudaEventQuery(done);
      if (rc == cudaSuccess) return Watchdog::Poll::done();
      if (rc != cudaErrorNotReady) return Watchdog::Poll::failed(std::string("CUDA error ") + cudaGetErrorString(rc));
      if (aborting->load()) return Watchdog::Poll::pending();  // COMM may be freed by the abort hook's ncclCommAbort
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(comm, &async) == ncclSuccess && async != ncclSuccess && async != ncclInProgress)
        return Watchdog::Poll::failed(std::string("NCCL asynchronous error: ") + ncclGetErrorString(async));
      return Watchdog::Poll::pending();
    }, this);
  }

  const MpiRuntime& mpi_;
  int rank_, size_;
  // Atomic: the abort hook takes it (another thread: the watchdog's) while the training
  // thread may be reading it.
  std::atomic<ncclComm_t> comm_{nullptr};
  cudaStream_t stream_ = nullptr;
  c10::DeviceIndex device_;
  cudaEvent_t last_done_ = nullptr;  // the last operation's event until wait_all()
  uint64_t hook_ = 0;
  std::unique_ptr<CudaEvent> ready_;
  std::unique_ptr<CudaEvent> captured_done_;  // the ops' event while capturing (finish_op)
  std::atomic<bool> captured_{false};          // a graph has captured work of this communicator
  std::atomic<bool> aborting_{false};          // the abort hook ran
  // A ring: an op's event is re-recorded 64 ops later; by then the watchdog has seen the
  // op complete (ops complete in order), or it polls the newer op, which is as good.
  std::array<std::unique_ptr<CudaEvent>, 64> done_;
  uint64_t ops_ = 0;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const MpiRuntime& mpi, int device) {
  return std::make_unique<NcclCommunicator>(mpi, device);
}

}  // namespace lockstep

#else  // built without CUDA/NCCL: the NCCL backend reports itself missing.

namespace lockstep {

std::unique_ptr<Communicator> make_nccl_communicator(const MpiRuntime&, int) {
  throw Error("this lockstep was built without NCCL (rebuild with CUDA and NCCL available)");
}

}  // namespace lockstep
#endif
