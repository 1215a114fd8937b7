// stop_rule: when validation says a run is done — one mechanism for both
// - early stopping (--train.early-stop-metric/-patience/-min-delta): the metric has not
//   improved by more than min-delta for PATIENCE evaluations in a row;
// - a target (--train.stop-at val_acc>=0.93): time-to-accuracy runs stop once reached.
// observe() sees every validation result. Validation is all-reduced, identical on every
// rank, so every rank decides alike without another collective. The state (best value,
// evaluations since it, the history) travels in checkpoints, so a resumed run counts on
// and a run that stopped stays stopped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/eval/evaluator.hpp"

namespace lockstep {

class StopRule {
 public:
  explicit StopRule(const Config& cfg);
  bool active() const;
  // It has seen a validation (or was loaded from a checkpoint that had).
  bool has_state() const { return have_best_ || !history_.empty(); }
  // After a validation at STEP (SECONDS since the run started): why to stop, or "".
  std::string observe(const EvalResult& ev, int64_t step, double seconds);
  std::string state_json() const;  // with the early-stopping metric it counts
  // False, loading nothing, when JSON counted another --train.early-stop-metric (its best and
  // history are another metric's values: a resume onto val_loss compared losses with the
  // val_acc best and stopped a run that was improving). State without a metric (before
  // 2026-11-29) loads as it is.
  bool load_state_json(const std::string& json, const std::string& path);
  std::string metric_counted(const std::string& json) const;  // JSON's metric, "" when unsaid

 private:
  BestMetric early_;
  int patience_;
  double min_delta_;
  BestMetric target_;
  double target_value_;
  double best_ = 0.0;
  bool have_best_ = false;
  int since_best_ = 0;
  std::vector<std::pair<int64_t, double>> history_;  // (step, early-stop metric)
};

}  // namespace lockstep
