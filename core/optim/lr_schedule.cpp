// lr_schedule: see lr_schedule.hpp.
#include "core/optim/lr_schedule.hpp"

#include <algorithm>
#include <cmath>

namespace lockstep {

double LrSchedule::at(int64_t global_step) const {
  const int64_t step = global_step + offset;
  if (warmup_steps > 0 && step < warmup_steps)
    return base * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  if (kind == Schedule::kStep)
    return base * std::pow(gamma, static_cast<double>((step - warmup_steps) / std::max<int64_t>(1, step_size)));
  if (kind != Schedule::kCosine) return base;
  const int64_t span = std::max<int64_t>(1, total_steps - warmup_steps);
  const double t = std::clamp(static_cast<double>(step - warmup_steps) / static_cast<double>(span), 0.0, 1.0);
  return base * (min_fraction + (1.0 - min_fraction) * 0.5 * (1.0 + std::cos(M_PI * t)));
}

}  // namespace lockstep
