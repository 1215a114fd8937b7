// watchdog: see watchdog.hpp.
#include "core/dist/watchdog.hpp"

#include "core/dist/checks.hpp"

#include <algorithm>
#include <cstdio>

namespace lockstep {

Watchdog::Watchdog(double timeout_s, Handler on_failure)
    : timeout_s_(timeout_s), on_failure_(std::move(on_failure)), thread_(&Watchdog::run, this) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

uint64_t Watchdog::begin(const std::string& what, bool collective) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_id_++;
  open_.emplace(id, Op{what, std::chrono::steady_clock::now(), {}, nullptr, collective ? flight_.begin(what) : 0});
  return id;
}

void Watchdog::end(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = open_.find(id);
  if (it == open_.end()) return;
  if (it->second.seq) flight_.end(it->second.seq);
  open_.erase(it);
}

void Watchdog::watch(const std::string& what, std::function<Poll()> poll, const void* owner) {
  std::lock_guard<std::mutex> lock(mu_);
  open_.emplace(next_id_++, Op{what, std::chrono::steady_clock::now(), std::move(poll), owner, flight_.begin(what)});
}

void Watchdog::set_tick(std::function<void()> tick) {
  std::lock_guard<std::mutex> lock(mu_);
  tick_ = std::move(tick);
}

void Watchdog::forget(const void* owner) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = open_.begin(); it != open_.end();) it = it->second.owner == owner && owner ? open_.erase(it) : std::next(it);
}

void Watchdog::fire(std::unique_lock<std::mutex>& lock, const std::string& cause) {
  fired_ = true;
  lock.unlock();
  on_failure_(cause);  // normally does not return (MPI_Abort)
  lock.lock();
}

void Watchdog::run() {
  const auto period = std::chrono::milliseconds(std::clamp(static_cast<int>(timeout_s_ * 100), 10, 100));
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, period, [&] { return stop_; });
    if (stop_ || fired_) continue;
    if (tick_) {
      const auto tick = tick_;
      lock.unlock();
      tick();
      lock.lock();
      if (stop_ || fired_) continue;
    }
    const auto now = std::chrono::steady_clock::now();
    for (auto it = open_.begin(); it != open_.end();) {
      if (it->second.poll) {
        const Poll p = it->second.poll();
        if (p.state == Poll::kDone) {
          if (it->second.seq) flight_.end(it->second.seq);
          it = open_.erase(it);
          continue;
        }
        if (p.state == Poll::kFailed) {
          const std::string cause = it->second.what + " failed: " + p.error + "; ending the job" +
                                    (p.error.find("NCCL") != std::string::npos ? std::string(kNcclNext) : "");
          if (it->second.seq) flight_.end(it->second.seq, true);
          open_.erase(it);
          fire(lock, cause);
          break;
        }
      }
      const double waited = std::chrono::duration<double>(now - it->second.start).count();
      if (waited > timeout_s_) {
        char buf[512];
        std::snprintf(buf, sizeof buf,
                      "%s has not completed after %.1f s (--dist.comm-timeout %.1f s): another rank is stalled, "
                      "dead or took a different path; ending the job (the flight records below say where each rank "
                      "was; docs/troubleshooting.md \"The job hangs\")",
                      it->second.what.c_str(), waited, timeout_s_);
        fire(lock, buf);
        break;
      }
      ++it;
    }
  }
}

}  // namespace lockstep
