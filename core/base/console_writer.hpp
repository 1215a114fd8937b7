// console_writer: the ranks' stdout/stderr written by a background thread, so that no rank
// ever blocks on its launcher's pipe.
//
// Why: mpirun stops reading its ranks' output the moment it is told to terminate (SIGTERM),
// then passes the signal on. A rank logging a line per step filled the pipe, blocked in
// write(2) inside the training loop, never reached the stop checkpoint and was SIGKILLed
// (tests/e2e/run_safety.sh, SIGTERM to mpirun). With this writer the training loop only
// queues text; a stalled console costs queue memory (bounded), never progress. Rank 0's
// info lines also go to RUN_DIR/train.log, written by the logger itself, in line.
//
// 1. write() queues (fd, text), returns its ticket at once; one thread writes the queue in
//    order with write(2) (no stdio locks shared with the caller);
// 2. beyond kMaxQueued bytes (text plus a per-entry allowance), new text is dropped and
//    counted; once the console takes text again a line says how much was dropped;
// 3. drain(ticket, stall) waits until the text up to TICKET is written, giving up once
//    the writer has moved no byte for STALL (a launcher that no longer reads); after one
//    such give-up, drains look for movement for at most 100 ms until the writer moves
//    again, so a dead console costs one STALL, not one per line. Warnings and errors
//    drain to their own line (log.cpp);
// 4. destruction drains what is queued (same stall rule) and joins the thread, or
//    detaches it if it is stuck in write(2): exiting the process ends it.
// Not copyable. Thread-safe. Text other code writes to fds 1/2 directly (Open MPI's help
// messages, NCCL_DEBUG, TORCH_WARN) is not ordered with the queued lines.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace lockstep::log {

class ConsoleWriter {
 public:
  static constexpr size_t kMaxQueued = size_t{4} << 20;
  static constexpr size_t kEntryCost = 64;  // bookkeeping per queued entry, counted against the bound

  ConsoleWriter();
  ~ConsoleWriter();
  ConsoleWriter(const ConsoleWriter&) = delete;
  ConsoleWriter& operator=(const ConsoleWriter&) = delete;

  // The ticket of TEXT (0 when it was dropped).
  uint64_t write(int fd, std::string text);
  // True when everything up to TICKET (all queued so far: kAll) is written.
  static constexpr uint64_t kAll = UINT64_MAX;
  bool drain(std::chrono::milliseconds stall, uint64_t ticket = kAll);
  uint64_t dropped_bytes() const;

 private:
  struct Shared {
    std::mutex mu;
    std::condition_variable wake;   // the writer: text queued or closing
    std::condition_variable moved;  // drain(): bytes written, or the writer finished
    std::deque<std::pair<int, std::string>> queue;
    size_t queued_cost = 0;
    uint64_t dropped = 0;  // bytes dropped since the last notice
    uint64_t dropped_total = 0;
    uint64_t issued = 0;   // tickets handed out
    uint64_t written = 0;  // tickets fully written (in order)
    uint64_t bytes_written = 0;
    uint64_t stalled_at = UINT64_MAX;  // bytes_written when a drain last gave up
    bool closing = false;
    bool done = false;  // the thread has returned
  };
  static void run(std::shared_ptr<Shared> s);
  static void write_all(Shared& s, int fd, const std::string& text);

  std::shared_ptr<Shared> s_;  // shared with the thread, which may outlive this object
  std::thread thread_;
};

}  // namespace lockstep::log
