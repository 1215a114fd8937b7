// communicator: how gradients are summed across ranks. Two backends behind one interface:
// MpiCommunicator (host memory; MPI_Allreduce on a communication thread, so reductions
// overlap the backward pass; what is still queued when wait_all is called runs on the
// caller's thread) and the NCCL backend (device memory, its own CUDA stream,
// ordered after the compute stream with events; nccl_bootstrap.hpp).
//
// Contract:
// 1. every rank starts the same operations, on buffers of the same length, in the same
//    order (operations run in start order);
// 2. start_allreduce returns at once; the buffer must stay untouched until wait_all;
// 3. wait_all returns when every started operation is complete (NCCL: when the compute
//    stream is ordered after them), and rethrows an error from the communication thread.
// Pointers are host pointers for MPI, device pointers for NCCL.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace lockstep {

class MpiRuntime;

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // WHAT names the operation in watchdog and error messages ("gradient bucket 2").
  virtual void start_allreduce(float* data, size_t n, const std::string& what) = 0;
  virtual void wait_all() = 0;
  virtual void broadcast(float* data, size_t n, int root) = 0;
  // Whether started operations may run in the background while the caller computes
  // (overlap). Off: they run when wait_all is called, on the caller's thread.
  virtual void set_background(bool on) { (void)on; }
  // Ends the communicator on the normal path (NCCL: drain, ncclCommDestroy). Collective.
  // Without it, the destructor aborts instead (the error path).
  virtual void destroy() {}
  void allreduce_sum(float* data, size_t n) {
    start_allreduce(data, n, "allreduce");
    wait_all();
  }
};

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(const MpiRuntime& mpi);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  std::string name() const override { return "mpi"; }
  int rank() const override;
  int size() const override;
  void start_allreduce(float* data, size_t n, const std::string& what) override;
  void wait_all() override;
  void broadcast(float* data, size_t n, int root) override;
  void set_background(bool on) override;

 private:
  static constexpr size_t kWakeBytes = 256 << 10;  // smaller: run by the next wake or by wait_all
  struct Op {
    float* data;
    size_t n;
    std::string what;
  };
  void run();
  void execute_front(std::unique_lock<std::mutex>& lock);
  void reduce(const Op& op) const;

  const MpiRuntime& mpi_;
  const bool threaded_;  // MPI granted a level that allows a communication thread
  std::mutex mu_;
  std::condition_variable work_cv_;  // the communication thread waits for work
  std::condition_variable done_cv_;  // wait_all waits for completions (separate: no spurious wake-ups)
  std::deque<Op> queue_;
  size_t pending_ = 0;  // queued + running
  bool stop_ = false;
  bool busy_ = false;        // a thread is running an operation
  bool background_ = true;   // the communication thread may run operations
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace lockstep
