// train_state: see train_state.hpp.
#include "core/train/train_state.hpp"

#include <fmt/format.h>

#include "core/base/log.hpp"
#include "core/eval/mirror.hpp"

namespace lockstep {

TrainState::TrainState(const Config& cfg) : rule_(cfg), cfg_(&cfg) {}

void TrainState::advance_step(int64_t step_in_epoch, int64_t global_batch) {
  ++pos_.step;
  pos_.samples_done_in_epoch = step_in_epoch * global_batch;
}

void TrainState::end_epoch() {
  ++pos_.epoch;
  pos_.samples_done_in_epoch = 0;
  epoch_ = WindowStats{};
}

bool TrainState::observe_eval(const EvalResult& ev, double seconds) {
  last_eval_ = ev;
  if (ev.count == 0) return false;
  if (ev.sequence) {
    val_acc_ = val_f1_ = -1.0;
    val_cer_ = ev.cer;
    val_wer_ = ev.wer;
  } else {
    val_acc_ = ev.accuracy;
    val_f1_ = ev.macro_f1;
    val_cer_ = val_wer_ = -1.0;
  }
  if (!rule_.active() || stopped()) return false;
  stopped_early_ = rule_.observe(ev, pos_.step, seconds);
  return stopped();
}

TrainState TrainState::with_open_window(const WindowStats& w) const {
  TrainState at = *this;
  at.epoch_ += w;
  return at;
}

void TrainState::to_meta(CheckpointMeta* m) const {
  m->pos = pos_;
  m->lr = lr_;
  m->clipped_steps = clipped_steps_;
  m->epoch_stats = epoch_.to_json();
  m->stopped_early = stopped_early_;
  m->stop_rule = rule_.active() || rule_.has_state() ? rule_.state_json() : "";
  m->val_acc = val_acc_;
  m->val_f1 = val_f1_;
  m->val_cer = val_cer_;
  m->val_wer = val_wer_;
}

void TrainState::from_meta(const CheckpointMeta& m, const std::string& path, int64_t global_batch,
                           int64_t steps_per_epoch) {
  pos_ = m.pos;
  if (m.lr >= 0) lr_ = m.lr;
  clipped_steps_ = m.clipped_steps;
  epoch_ = m.epoch_stats.empty() ? WindowStats{} : WindowStats::from_json(m.epoch_stats, path);
  val_acc_ = m.val_acc;
  val_f1_ = m.val_f1;
  val_cer_ = m.val_cer;
  val_wer_ = m.val_wer;
  stopped_early_ = m.stopped_early;
  rule_ = StopRule(*cfg_);
  // Scores of another split, or with and without --eval.hflip (the mirror average scores
  // ~0.3 pp higher), do not compare: a changed validation restarts the stop rule.
  if (const std::string change = validation_change(m, *cfg_); !change.empty() && !m.stop_rule.empty()) {
    log::warn0(fmt::format("{} was {}: early stopping and --train.stop-at start counting afresh", path, change));
  } else if (!rule_.load_state_json(m.stop_rule, path)) {
    log::warn0(fmt::format("{} counted early stopping on {}; --train.early-stop-metric {} starts counting afresh", path,
                           rule_.metric_counted(m.stop_rule), to_string(cfg_->early_stop_metric)));
  }
  // Checkpoints before 2026-11-28 (no lr in their meta) held an epoch's last position also
  // after its end work (a --ckpt.every step at the epoch's end): they roll over, as then.
  if (m.lr < 0 && epoch_consumed(steps_per_epoch, global_batch)) end_epoch();
}

}  // namespace lockstep
