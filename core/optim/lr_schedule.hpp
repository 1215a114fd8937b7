// lr_schedule: the learning rate at a given optimizer step. A pure function of the step,
// so a resumed run continues the schedule with no extra state.
//
// constant: base after warmup. cosine: base * (min + (1 - min) * (1 + cos(pi * t)) / 2)
// with t the fraction of post-warmup steps done. step: base * gamma^floor(t / STEP_SIZE)
// with t the post-warmup steps done. Warmup: linear from base/warmup to base over the
// first WARMUP steps (the trainer turns --train.warmup-epochs into steps).
#pragma once

#include <cstdint>
#include <string>

#include "core/config/enums.hpp"

namespace lockstep {

struct LrSchedule {
  Schedule kind = Schedule::kConstant;
  double base = 0.05;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;  // the run's last step
  double min_fraction = 0.0;
  int64_t step_size = 1;  // step: post-warmup steps between decays
  double gamma = 0.1;     // step: decay factor
  // Added to the step: a run resumed on another world size or batch counts the schedule in
  // this world's steps (core/train/session.hpp, plan_from); 0 otherwise.
  int64_t offset = 0;

  double at(int64_t global_step) const;  // the steps done before this one (offset added)
};


}  // namespace lockstep
