// progress: see progress.hpp.
#include "core/base/progress.hpp"

#include <algorithm>
#include <cstdio>

namespace lockstep {

std::string format_duration(double seconds) {
  if (seconds < 0) return "--:--";
  const auto s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  return buf;
}

std::string progress_line(const Progress& p, int bar_width) {
  const double frac = p.steps > 0 ? std::clamp(static_cast<double>(p.step) / static_cast<double>(p.steps), 0.0, 1.0) : 0.0;
  const int filled = static_cast<int>(frac * bar_width + 0.5);
  const std::string bar = std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(bar_width - filled), '-');
  char buf[256];
  std::snprintf(buf, sizeof buf, "epoch %lld/%lld [%s] %lld/%lld loss %.4f acc %.3f %.0f samples/s ETA %s",
                static_cast<long long>(p.epoch), static_cast<long long>(p.epochs), bar.c_str(),
                static_cast<long long>(p.step), static_cast<long long>(p.steps), p.loss, p.accuracy, p.samples_per_s,
                format_duration(p.eta_s).c_str());
  return buf;
}

}  // namespace lockstep
