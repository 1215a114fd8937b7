// clock: see clock.hpp.
#include "core/base/clock.hpp"

#include <fmt/format.h>


namespace lockstep {

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

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
