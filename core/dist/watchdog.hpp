// watchdog: no collective waits forever.
//
// 1. Every collective lockstep starts (MPI on any thread, NCCL enqueues) is registered with
//    begin(what) and closed with end(id); NCCL work may instead register a poll function
//    that says whether the device has finished it, is still at it, or failed (a CUDA
//    error, an NCCL asynchronous error).
// 2. A watchdog thread checks the open operations every ~100 ms. One older than the
//    timeout, or one whose poll reports a failure, triggers on_failure once, with a
//    root-cause line naming the collective; the runtime's handler logs it with rank and
//    host, aborts NCCL communicators, and ends the job with MPI_Abort.
// 3. Every collective it watches also goes to its flight recorder (flight_recorder.hpp),
//    point-to-point messages (collective = false) do not: the recorder's sequence numbers
//    must mean the same operation on every rank.
// 4. A tick function, when set, runs on the watchdog thread every period, outside its lock
//    (the runtime's: a flight-record dump asked for by SIGUSR2).
// 5. The watchdog owns no communicator; it calls MPI only through the handler. Polls run
//    under the watchdog's lock: a communicator calls forget(itself) before it destroys what
//    its polls touch, and no poll of it runs after forget returns.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "core/dist/flight_recorder.hpp"

namespace lockstep {

class Watchdog {
 public:
  using Handler = std::function<void(const std::string& root_cause)>;
  // What a poll of asynchronous work reports.
  struct Poll {
    enum State { kPending, kDone, kFailed } state = kPending;
    std::string error;  // kFailed: why
    static Poll pending() { return {}; }
    static Poll done() { return {kDone, {}}; }
    static Poll failed(std::string why) { return {kFailed, std::move(why)}; }
  };
  Watchdog(double timeout_s, Handler on_failure);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  uint64_t begin(const std::string& what, bool collective = true);
  void end(uint64_t id);
  // Watches asynchronous work of OWNER until POLL reports it done (or failed).
  void watch(const std::string& what, std::function<Poll()> poll, const void* owner = nullptr);
  // Drops OWNER's watches; returns after any poll of them in progress has finished.
  void forget(const void* owner);
  double timeout() const { return timeout_s_; }
  FlightRecorder& flight() { return flight_; }
  void set_tick(std::function<void()> tick);

  // RAII for begin/end; a null watchdog watches nothing.
  class Scope {
   public:
    Scope(Watchdog* w, const std::string& what, bool collective = true)
        : w_(w), id_(w ? w->begin(what, collective) : 0) {}
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
    std::function<Poll()> poll;  // async work; empty for begin/end operations
    const void* owner = nullptr;
    uint64_t seq = 0;  // in the flight recorder; 0: not recorded
  };
  void fire(std::unique_lock<std::mutex>& lock, const std::string& cause);
  void run();

  const double timeout_s_;
  Handler on_failure_;
  FlightRecorder flight_;
  std::function<void()> tick_;  // guarded by mu_ (copied out to run)
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Op> open_;
  uint64_t next_id_ = 1;
  bool stop_ = false, fired_ = false;
  std::thread thread_;
};

}  // namespace lockstep
