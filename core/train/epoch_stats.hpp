// epoch_stats: the training numbers a log row, an epoch row and the end row report.
//
// 1. LogWindow holds the steps since the last log row: each step's loss and correct count
//    stay on the device (no host sync in the step loop).
// 2. reduce() is collective: one all-reduce of [each step's loss summed over ranks, the
//    correct count] gives the window's WindowStats. A non-finite step loss ends the run
//    naming the first such step — except under fp16 AMP, whose scaler skips those steps
//    (they count as steps, not in the mean loss).
// 3. close() = reduce() + clear: a log row. peek() = reduce() without clearing: a
//    checkpoint checks the window (never save weights a NaN step made) and stores the
//    epoch's numbers so far, but the window goes on to its log row intact.
// 4. WindowStats are sums, so merging is exact: an epoch is the sum of its windows (an
//    empty window adds nothing), and a resumed epoch continues from the sums its
//    checkpoint stored (to_json / from_json).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/base/clock.hpp"

namespace lockstep {

struct WindowStats {
  int64_t steps = 0;         // optimizer steps
  int64_t finite_steps = 0;  // of them, with a finite loss
  double loss_sum = 0;       // sum over finite steps of the step's mean loss over ranks
  double correct = 0;        // correctly classified training samples, all ranks
  double samples = 0;        // training samples, all ranks
  Times times;               // rank 0's time breakdown of these steps

  double loss() const;  // NaN when no step had a finite loss
  double acc() const;   // NaN when empty
  // SAMPLES over SECONDS: what the steps trained, at whatever global batch each ran (a
  // resumed epoch's steps may have run at another world size or batch); 0 when empty.
  double samples_per_s() const;
  WindowStats& operator+=(const WindowStats& o);
  std::string to_json() const;
  static WindowStats from_json(const std::string& json, const std::string& what);  // throws naming WHAT
};

using AllreduceSum = std::function<void(double* data, int n)>;

class LogWindow {
 public:
  // GLOBAL_BATCH: samples per optimizer step over all ranks; WORLD: ranks (loss sums are
  // divided by it); SKIP_NONFINITE: fp16 AMP.
  LogWindow(int64_t global_batch, int world, bool skip_nonfinite);

  void add_step(const torch::Tensor& loss, const torch::Tensor& correct);  // device scalars
  void add_times(const Times& t) { times_ += t; }
  int64_t steps() const { return static_cast<int64_t>(losses_.size()); }
  int64_t first_step() const { return first_step_; }  // global step of the window's first step, 1-based

  WindowStats peek(const AllreduceSum& sum, double lr) const;  // collective
  WindowStats close(const AllreduceSum& sum, double lr, int64_t next_first_step);  // collective
  void restart(int64_t first_step);  // empty, the next step is FIRST_STEP
  // Rank 0's own mean loss and accuracy so far (a host sync: the progress bar only).
  std::pair<double, double> local_means(int64_t local_batch) const;

 private:
  int64_t global_batch_;
  int world_;
  bool skip_nonfinite_;
  std::vector<torch::Tensor> losses_, correct_;
  int64_t first_step_ = 1;
  Times times_;
};

}  // namespace lockstep
