// console_writer: see console_writer.hpp.
#include "core/base/console_writer.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace lockstep::log {

ConsoleWriter::ConsoleWriter() : s_(std::make_shared<Shared>()), thread_(run, s_) {}

ConsoleWriter::~ConsoleWriter() {
  const auto stall = std::chrono::milliseconds(1000);
  drain(stall);
  std::unique_lock<std::mutex> lock(s_->mu);
  s_->closing = true;
  s_->wake.notify_all();
  // The writer finishes the queue, then returns. One stuck in write(2) on a pipe nobody
  // reads never would: let it go (it holds its own reference to the shared state).
  for (;;) {
    if (s_->done) {
      lock.unlock();
      thread_.join();
      return;
    }
    const uint64_t before = s_->bytes_written;
    if (!s_->moved.wait_for(lock, stall, [&] { return s_->done || s_->bytes_written != before; })) {
      thread_.detach();
      return;
    }
  }
}

uint64_t ConsoleWriter::write(int fd, std::string text) {
  uint64_t ticket = 0;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    if (s_->queued_cost + text.size() + kEntryCost > kMaxQueued) {
      s_->dropped += text.size();
      s_->dropped_total += text.size();
      return 0;
    }
    if (s_->dropped > 0) {
      std::string notice = "[lockstep: " + std::to_string(s_->dropped) +
                           " bytes of console output dropped while the console was not being read "
                           "(rank 0's info lines are also in RUN_DIR/train.log)]\n";
      s_->dropped = 0;
      s_->queued_cost += notice.size() + kEntryCost;
      s_->queue.emplace_back(fd, std::move(notice));
      ++s_->issued;
    }
    s_->queued_cost += text.size() + kEntryCost;
    s_->queue.emplace_back(fd, std::move(text));
    ticket = ++s_->issued;
  }
  s_->wake.notify_one();
  return ticket;
}

bool ConsoleWriter::drain(std::chrono::milliseconds stall, uint64_t ticket) {
  std::unique_lock<std::mutex> lock(s_->mu);
  const uint64_t target = std::min(ticket, s_->issued);
  for (;;) {
    if (s_->written >= target) return true;
    // Stuck since the last give-up: only a short look for movement, not a whole STALL.
    const bool known_stuck = s_->stalled_at == s_->bytes_written;
    const auto wait = known_stuck ? std::min(stall, std::chrono::milliseconds(100)) : stall;
    const uint64_t before = s_->bytes_written;
    if (!s_->moved.wait_for(lock, wait, [&] { return s_->written >= target || s_->bytes_written != before; })) {
      s_->stalled_at = s_->bytes_written;
      return false;
    }
  }
}

uint64_t ConsoleWriter::dropped_bytes() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->dropped_total;
}

// All of TEXT to FD, or until the descriptor fails (a closed pipe: EPIPE, SIGPIPE being
// ignored by main()); a console that is gone is not an error worth stopping for. Every
// byte written counts as progress for drain().
void ConsoleWriter::write_all(Shared& s, int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.bytes_written += static_cast<uint64_t>(n);
    }
    s.moved.notify_all();
  }
}

void ConsoleWriter::run(std::shared_ptr<Shared> s) {
  std::unique_lock<std::mutex> lock(s->mu);
  for (;;) {
    s->wake.wait(lock, [&] { return s->closing || !s->queue.empty(); });
    if (s->queue.empty()) break;  // closing, nothing left
    auto [fd, text] = std::move(s->queue.front());
    s->queue.pop_front();
    lock.unlock();
    write_all(*s, fd, text);
    lock.lock();
    s->queued_cost -= text.size() + kEntryCost;
    ++s->written;
    s->moved.notify_all();
  }
  s->done = true;
  s->moved.notify_all();
}

}  // namespace lockstep::log
