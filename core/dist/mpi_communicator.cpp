// mpi_communicator: see mpi_communicator.hpp.
#include "core/dist/mpi_communicator.hpp"

#include <algorithm>
#include <climits>

#include "core/dist/mpi_runtime.hpp"
#include "core/dist/watchdog.hpp"

namespace lockstep {

MpiCommunicator::MpiCommunicator(const MpiRuntime& mpi) : mpi_(mpi), threaded_(mpi.thread_serialized()) {
  if (threaded_) thread_ = std::thread(&MpiCommunicator::run, this);
}

MpiCommunicator::~MpiCommunicator() {
  if (!threaded_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
}

int MpiCommunicator::rank() const { return mpi_.rank(); }
int MpiCommunicator::size() const { return mpi_.size(); }

void MpiCommunicator::reduce(const Op& op) const {
  const size_t elem = wire_bytes(op.type);
  Watchdog::Scope watch(mpi_.watchdog(), "MPI_Allreduce of " + op.what + " (" + std::to_string(op.n * elem) + " bytes" +
                                             (op.type == WireType::kF32 ? "" : std::string(", ") + wire_name(op.type)) + ")");
  const MPI_Datatype type = op.type == WireType::kF32 ? MPI_FLOAT : MPI_UINT16_T;
  const MPI_Op sum = op.type == WireType::kF32 ? MPI_SUM : op.type == WireType::kBF16 ? sum_bf16_.op() : sum_f16_.op();
  char* data = static_cast<char*>(op.data);
  size_t n = op.n;
  while (n > 0) {  // MPI counts are int
    const int chunk = static_cast<int>(std::min<size_t>(n, INT_MAX));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, chunk, type, sum, mpi_.comm()));
    data += static_cast<size_t>(chunk) * elem;
    n -= static_cast<size_t>(chunk);
  }
}

// Runs the oldest queued operation on the calling thread; LOCK is held on entry and exit.
// Only one thread executes at a time (busy_), and always the queue's front, so operations
// run in start order whichever thread runs them.
void MpiCommunicator::execute_front(std::unique_lock<std::mutex>& lock) {
  const Op op = queue_.front();
  queue_.pop_front();
  busy_ = true;
  const bool skip = error_ != nullptr;  // after an error, drain without communicating
  lock.unlock();
  std::exception_ptr error;
  try {
    if (!skip) reduce(op);
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  if (error) error_ = error;
  busy_ = false;
  --pending_;
  done_cv_.notify_all();
}

void MpiCommunicator::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || (background_ && !busy_ && !queue_.empty()); });
    if (stop_) return;
    execute_front(lock);
  }
}

void MpiCommunicator::set_background(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  background_ = on;
}

void MpiCommunicator::start_allreduce(void* data, size_t n, WireType type, const std::string& what) {
  if (!threaded_) {
    reduce(Op{data, n, type, what});
    return;
  }
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(Op{data, n, type, what});
    ++pending_;
    // Small operations are latency-bound: waking the communication thread costs more than
    // they gain from overlap, so they wait for the next large one or for wait_all.
    wake = background_ && n * wire_bytes(type) >= kWakeBytes;
  }
  if (wake) work_cv_.notify_one();
}

void MpiCommunicator::wait_all() {
  if (!threaded_) return;
  std::unique_lock<std::mutex> lock(mu_);
  // Rather than sleep while operations wait in the queue, the caller runs them itself
  // (the thread hand-off costs ~13 us per operation; measured with bench/allreduce_bench).
  while (pending_ > 0) {
    if (!busy_ && !queue_.empty())
      execute_front(lock);
    else
      done_cv_.wait(lock);
  }
  if (error_) {
    const std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void MpiCommunicator::broadcast(float* data, size_t n, int root) {
  wait_all();  // keep collectives in order with queued reductions
  mpi_.broadcast_bytes(data, n * sizeof(float), root);
}

}  // namespace lockstep
