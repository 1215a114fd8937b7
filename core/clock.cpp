// clock: see clock.hpp.
#include "core/clock.hpp"

#include <cstdio>

namespace lockstep {

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string Times::summary(int64_t steps) const {
  const double per = 1000.0 / static_cast<double>(std::max<int64_t>(1, steps));
  const double total = std::max(seconds, 1e-9);
  const auto part = [&](const char* name, double s) {
    return std::string(name) + " " + fmt("%.1f", per * s) + " ms/step (" + fmt("%.1f", 100.0 * s / total) + "%)";
  };
  return part("data wait", data_wait) + ", " + part("forward", forward) + ", " + part("backward", backward) + ", " +
         part("exposed comm", exposed_comm) + ", " + part("optimizer", optimizer);
}

}  // namespace lockstep
