// stop_rule: see stop_rule.hpp.
#include "core/train/stop_rule.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/base/error.hpp"
#include "io/util/json_io.hpp"

namespace lockstep {

StopRule::StopRule(const Config& cfg)
    : early_(cfg.early_stop_metric),
      patience_(cfg.early_stop_patience),
      min_delta_(cfg.early_stop_min_delta),
      target_(cfg.stop_metric),
      target_value_(cfg.stop_value) {}

bool StopRule::active() const { return early_ != BestMetric::kNone || target_ != BestMetric::kNone; }

std::string StopRule::observe(const EvalResult& ev, int64_t step, double seconds) {
  if (target_ != BestMetric::kNone) {
    const double v = metric_value(ev, target_);
    const bool reached = lower_is_better(target_) ? v <= target_value_ : v >= target_value_;
    if (reached)
      return fmt::format("{} {:.4f} reached the target {}{:g} at step {} after {:.1f} s (--train.stop-at)",
                         to_string(target_), v, lower_is_better(target_) ? "<=" : ">=", target_value_, step, seconds);
  }
  if (early_ == BestMetric::kNone) return "";
  const double v = metric_value(ev, early_);
  if (!std::isfinite(v)) return "";  // no score (CTC that aligned no sample): neither better nor worse
  history_.emplace_back(step, v);
  // Larger is better, except for the loss and the error rates.
  const double signed_v = lower_is_better(early_) ? -v : v;
  if (!have_best_ || signed_v > best_ + min_delta_) {
    best_ = signed_v;
    have_best_ = true;
    since_best_ = 0;
    return "";
  }
  if (++since_best_ < patience_) return "";
  std::string hist;
  for (size_t i = history_.size() > 8 ? history_.size() - 8 : 0; i < history_.size(); ++i)
    hist += fmt::format("{}{:.4f}@{}", hist.empty() ? "" : " ", history_[i].second, history_[i].first);
  return fmt::format("{} did not improve by more than {:g} for {} evaluation(s) (best {:.4f}; last: {}) "
                     "(--train.early-stop-*)",
                     to_string(early_), min_delta_, patience_, lower_is_better(early_) ? -best_ : best_, hist);
}

std::string StopRule::state_json() const {
  io::Json h = io::Json::array();
  for (const auto& [step, v] : history_) h.push_back({step, v});
  return io::dump_json(io::Json{{"metric", to_string(early_)}, {"best", best_}, {"have_best", have_best_},
                                 {"since_best", since_best_}, {"history", h}});
}

std::string StopRule::metric_counted(const std::string& json) const {
  const io::Json j = io::Json::parse(json, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("metric") && j["metric"].is_string() ? j["metric"].get<std::string>() : "";
}

bool StopRule::load_state_json(const std::string& json, const std::string& path) {
  if (json.empty()) return true;
  // A state of no early stopping ("none") holds no count: nothing to mistake.
  if (const std::string m = metric_counted(json); !m.empty() && m != "none" && m != to_string(early_)) return false;
  try {
    const io::Json j = io::Json::parse(json);
    best_ = io::json_get<double>(j, "best", path);
    have_best_ = io::json_get<bool>(j, "have_best", path);
    since_best_ = io::json_get<int>(j, "since_best", path);
    history_.clear();
    for (const auto& e : j.at("history"))
      history_.emplace_back(io::json_as<int64_t>(e.at(0), path), io::json_as<double>(e.at(1), path));
  } catch (const std::exception& e) {
    throw Error(path + ": malformed stop-rule state in the checkpoint (" + e.what() + ")");
  }
  return true;
}

}  // namespace lockstep
