// clock: see clock.hpp.
#include "core/base/clock.hpp"

#include <fmt/format.h>

#include <atomic>

namespace lockstep {

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace {
double steady_seconds() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }
std::atomic<double> job_offset{unix_seconds() - steady_seconds()};  // job clock - steady clock
}  // namespace

double job_seconds() { return steady_seconds() + job_offset.load(std::memory_order_relaxed); }

void set_job_clock(double unix_now) { job_offset.store(unix_now - steady_seconds(), std::memory_order_relaxed); }

std::string Times::summary(int64_t steps) const {
  const double per = 1000.0 / static_cast<double>(std::max<int64_t>(1, steps));
  const double total = std::max(seconds, 1e-9);
  const auto part = [&](const char* name, double s) {
    return fmt::format("{} {:.1f} ms/step ({:.1f}%)", name, per * s, 100.0 * s / total);
  };
  return fmt::format("{}, {}, {}, {}, {}", part("data wait", data_wait), part("forward", forward),
                     part("backward", backward), part("exposed comm", exposed_comm), part("optimizer", optimizer));
}

}  // namespace lockstep
