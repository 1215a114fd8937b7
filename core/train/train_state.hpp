// train_state: a training run's state between steps, with one owner — the position, the
// learning rate of the last step, the clipped-step count, the current epoch's statistics,
// the last validation and the stop rule. The trainer changes it only through the methods
// below; a checkpoint stores it (to_meta) and a resumed run restores it (from_meta).
// Nothing else writes it.
//
// 1. Each step: set_lr(), then advance_step() (the global step and the samples of the
//    epoch consumed); each log window adds its statistics (add_window).
// 2. end_epoch() is the one epoch rollover: the next epoch's first step, empty statistics.
//    The trainer calls it after the epoch's end work (validation, its row), also for a
//    resumed checkpoint that had consumed the epoch before that work ran.
// 3. observe_eval() records a validation and asks the stop rule; once it says stop, the
//    reason stays (stopped()), also across resumes.
// 4. The last validation's scores travel in checkpoints: a checkpoint taken after a resume
//    and before the next validation records the scores the resumed one held. (Only this
//    process's own validation, last_eval(), drives best.ckpt: a restored score has no loss
//    and no confusion matrix to compare.)
#pragma once

#include <cstdint>
#include <string>

#include "core/config/config.hpp"
#include "core/eval/evaluator.hpp"
#include "core/train/checkpoint_state.hpp"
#include "core/train/epoch_stats.hpp"
#include "core/train/stop_rule.hpp"

namespace lockstep {

class TrainState {
 public:
  explicit TrainState(const Config& cfg);

  const TrainPosition& pos() const { return pos_; }
  double lr() const { return lr_; }
  const WindowStats& epoch_stats() const { return epoch_; }
  // This process's last validation; count 0 when it has validated nothing yet.
  const EvalResult& last_eval() const { return last_eval_; }
  bool stopped() const { return !stopped_early_.empty(); }
  // Every sample of the epoch is consumed (its end work, or its rollover, still to come).
  bool epoch_consumed(int64_t steps_per_epoch, int64_t global_batch) const {
    return pos_.samples_done_in_epoch >= steps_per_epoch * global_batch;
  }
  const std::string& stopped_early() const { return stopped_early_; }  // why the stop rule ended the run

  // The run's steps whose gradient norm was clipped (--train.clip-norm), as of the last
  // set_clipped_steps (the trainer reads the device counter at windows, validations and
  // checkpoints).
  int64_t clipped_steps() const { return clipped_steps_; }

  void set_lr(double lr) { lr_ = lr; }
  void set_clipped_steps(int64_t n) { clipped_steps_ = n; }
  // STEP_IN_EPOCH optimizer steps of this epoch are done, each of GLOBAL_BATCH samples.
  void advance_step(int64_t step_in_epoch, int64_t global_batch);
  void add_window(const WindowStats& w) { epoch_ += w; }
  void end_epoch();
  // A validation of the current weights, SECONDS into the run: recorded, and seen by the
  // stop rule (unless the run already stopped). True when the rule stops the run now.
  bool observe_eval(const EvalResult& ev, double seconds);

  // A copy whose epoch statistics include the open window W (a mid-epoch checkpoint).
  TrainState with_open_window(const WindowStats& w) const;
  // The position, statistics, stop rule and last validation scores into M.
  void to_meta(CheckpointMeta* m) const;
  // Restores what to_meta stored, from the checkpoint at PATH. Scores of another validation
  // (validation_change: another --data.val-split, or --eval.hflip's other mode) do not
  // compare, so the stop rule starts afresh (one warning). The position is the checkpoint's as it is: one whose epoch's
  // samples were all consumed before its end work ran (a stop at its last step, or another
  // world size or batch) stays in that epoch, and the trainer runs the end work first; one
  // written before 2026-11-28 rolls over to the next epoch, as it did then (STEPS_PER_EPOCH of
  // GLOBAL_BATCH samples: this run's).
  void from_meta(const CheckpointMeta& m, const std::string& path, int64_t global_batch,
                 int64_t steps_per_epoch);

 private:
  TrainPosition pos_;
  double lr_ = 0.0;
  int64_t clipped_steps_ = 0;
  WindowStats epoch_;
  EvalResult last_eval_;
  // The scores a checkpoint records (-1: none): the last validation's, this process's or
  // the resumed checkpoint's.
  double val_acc_ = -1.0, val_f1_ = -1.0, val_cer_ = -1.0, val_wer_ = -1.0;
  StopRule rule_;
  const Config* cfg_;
  std::string stopped_early_;
};

}  // namespace lockstep
