// watchdog: see watchdog.hpp.
#include "core/watchdog.hpp"

#include <algorithm>
#include <cstdio>

namespace lockstep {

Watchdog::Watchdog(double timeout_s, Handler on_timeout)
    : timeout_s_(timeout_s), on_timeout_(std::move(on_timeout)), thread_(&Watchdog::run, this) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

uint64_t Watchdog::begin(const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_id_++;
  open_.emplace(id, Op{what, std::chrono::steady_clock::now(), {}});
  return id;
}

void Watchdog::end(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  open_.erase(id);
}

void Watchdog::watch(const std::string& what, std::function<bool()> done) {
  std::lock_guard<std::mutex> lock(mu_);
  open_.emplace(next_id_++, Op{what, std::chrono::steady_clock::now(), std::move(done)});
}

void Watchdog::run() {
  const auto period = std::chrono::milliseconds(std::clamp(static_cast<int>(timeout_s_ * 100), 10, 100));
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, period, [&] { return stop_; });
    if (stop_ || fired_) continue;
    const auto now = std::chrono::steady_clock::now();
    for (auto it = open_.begin(); it != open_.end();) {
      if (it->second.done && it->second.done()) {
        it = open_.erase(it);
        continue;
      }
      const double waited = std::chrono::duration<double>(now - it->second.start).count();
      if (waited > timeout_s_) {
        fired_ = true;
        char buf[512];
        std::snprintf(buf, sizeof buf,
                      "%s has not completed after %.1f s (--dist.comm-timeout %.1f s): another rank is stalled, "
                      "dead or took a different path; ending the job",
                      it->second.what.c_str(), waited, timeout_s_);
        const std::string cause = buf;
        lock.unlock();
        on_timeout_(cause);  // normally does not return (MPI_Abort)
        lock.lock();
        break;
      }
      ++it;
    }
  }
}

}  // namespace lockstep
