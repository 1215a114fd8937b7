// watchdog: no collective waits forever.
//
// 1. Every collective lockstep starts (MPI on any thread, NCCL enqueues) is registered with
//    begin(what) and closed with end(id); NCCL work may instead register a poll function
//    that says when the device has finished it.
// 2. A watchdog thread checks the open operations every ~100 ms. One older than the
//    timeout triggers on_timeout once, with a root-cause line naming the collective and
//    how long it has waited; the runtime's handler logs it with rank and host, aborts
//    NCCL communicators, and ends the job with MPI_Abort.
// 3. The watchdog owns no communicator; it calls MPI only through the handler.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace lockstep {

class Watchdog {
 public:
  using Handler = std::function<void(const std::string& root_cause)>;
  Watchdog(double timeout_s, Handler on_timeout);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  uint64_t begin(const std::string& what);
  void end(uint64_t id);
  // Watches asynchronous work: DONE() returns true once it has completed.
  void watch(const std::string& what, std::function<bool()> done);
  double timeout() const { return timeout_s_; }

  // RAII for begin/end; a null watchdog watches nothing.
  class Scope {
   public:
    Scope(Watchdog* w, const std::string& what) : w_(w), id_(w ? w->begin(what) : 0) {}
    ~Scope() {
      if (w_) w_->end(id_);
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Watchdog* w_;
    uint64_t id_;
  };

 private:
  struct Op {
    std::string what;
    std::chrono::steady_clock::time_point start;
    std::function<bool()> done;  // async work; empty for begin/end operations
  };
  void run();

  const double timeout_s_;
  Handler on_timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Op> open_;
  uint64_t next_id_ = 1;
  bool stop_ = false, fired_ = false;
  std::thread thread_;
};

}  // namespace lockstep
