// mpi_communicator: the MPI backend of communicator.hpp. Host memory; MPI_Allreduce runs
// on a communication thread, so reductions overlap the backward pass; what is still queued
// when wait_all is called runs on the caller's thread (no thread hand-off for the last,
// small buckets). Operations run strictly in start order, whichever thread runs them.
// 16-bit wire types go as MPI_UINT16_T with a user-defined sum (half_sum.hpp).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "core/dist/communicator.hpp"
#include "core/dist/half_sum.hpp"

namespace lockstep {

class MpiRuntime;

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(const MpiRuntime& mpi);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  std::string name() const override { return "mpi"; }
  int rank() const override;
  int size() const override;
  using Communicator::start_allreduce;
  void start_allreduce(void* data, size_t n, WireType type, const std::string& what) override;
  void wait_all() override;
  void broadcast(float* data, size_t n, int root) override;
  void set_background(bool on) override;

 private:
  static constexpr size_t kWakeBytes = 256 << 10;  // smaller: run by the next wake or by wait_all
  struct Op {
    void* data;
    size_t n;
    WireType type;
    std::string what;
  };
  void run();
  void execute_front(std::unique_lock<std::mutex>& lock);
  void reduce(const Op& op) const;

  const MpiRuntime& mpi_;
  const bool threaded_;  // MPI granted a level that allows a communication thread
  const MpiHalfSum sum_bf16_{WireType::kBF16}, sum_f16_{WireType::kF16};
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
