// run_report: what rank 0 tells the user about a run beyond the step lines: evaluation
// results (per-class table, confusion matrix), peak GPU memory per rank, the terminal
// progress bar.
#pragma once

#include "core/run_state.hpp"

namespace lockstep {

// Rank 0: the evaluation in the log (one line; with DETAIL the per-class table and the
// confusion matrix).
void report_eval(const Run& r, const EvalResult& ev, bool detail);
// Collective (GPU runs only; nothing on CPU): peak device memory of every rank since the
// last call, logged by rank 0.
void report_device_memory(const Run& r);

// Redraws the terminal progress bar at most every 0.2 s (rank 0, terminal only).
class ProgressBar {
 public:
  explicit ProgressBar(const Run& r);
  // STEP of STEPS done in EPOCH (1-based); LOSS/ACC: rank 0's running means this epoch.
  void update(int64_t epoch, int64_t step, int64_t steps, double loss, double acc, double samples_per_s,
              int64_t steps_left);
  bool due() const;  // whether update() would draw now (callers skip computing values)

 private:
  bool active_;
  Clock::time_point last_;
  const Run& r_;
};

}  // namespace lockstep
