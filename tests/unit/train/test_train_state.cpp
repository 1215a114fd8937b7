// TrainState: the run's state has one owner; a checkpoint's meta carries all of it and a
// resumed state is the state that was saved (through the JSON a checkpoint stores).
#include <gtest/gtest.h>

#include <cmath>

#include "core/config/config_checks.hpp"
#include "core/train/train_state.hpp"

using namespace lockstep;

namespace {

EvalResult accuracy(double acc, double f1) {
  EvalResult ev;
  ev.count = 100;
  ev.accuracy = acc;
  ev.macro_f1 = f1;
  ev.loss = 1.0 - acc;
  return ev;
}

Config early_stopping(int patience) {
  Config cfg;
  cfg.early_stop_metric = BestMetric::kValAcc;
  cfg.early_stop_patience = patience;
  return cfg;
}

// What a checkpoint of STATE restores: its meta through the stored JSON.
CheckpointMeta stored(const TrainState& state) {
  CheckpointMeta m;
  m.sample_shape = {1};
  m.batch_size = 1;
  state.to_meta(&m);
  return meta_from_json(meta_to_json(m), "mem.ckpt");
}

WindowStats window_of(int64_t steps, double loss_sum) {
  WindowStats w;
  w.steps = w.finite_steps = steps;
  w.loss_sum = loss_sum;
  w.samples = static_cast<double>(steps) * 64;
  w.correct = w.samples / 2;
  w.times.seconds = 0.5 * static_cast<double>(steps);
  return w;
}

}  // namespace

TEST(TrainState, StepsWindowsAndTheEpochRollover) {
  const Config cfg;
  TrainState s(cfg);
  s.set_lr(0.1);
  s.advance_step(1, 64);
  s.advance_step(2, 64);
  s.add_window(window_of(2, 3.0));
  EXPECT_EQ(s.pos().step, 2);
  EXPECT_EQ(s.pos().epoch, 0);
  EXPECT_EQ(s.pos().samples_done_in_epoch, 128);
  EXPECT_EQ(s.epoch_stats().steps, 2);
  EXPECT_DOUBLE_EQ(s.lr(), 0.1);
  s.end_epoch();
  EXPECT_EQ(s.pos().step, 2);
  EXPECT_EQ(s.pos().epoch, 1);
  EXPECT_EQ(s.pos().samples_done_in_epoch, 0);
  EXPECT_EQ(s.epoch_stats().steps, 0);
}

TEST(TrainState, AMidEpochCheckpointCountsTheOpenWindowWithoutClosingIt) {
  const Config cfg;
  TrainState s(cfg);
  s.add_window(window_of(2, 3.0));
  const TrainState at = s.with_open_window(window_of(1, 1.0));
  EXPECT_EQ(at.epoch_stats().steps, 3);
  EXPECT_EQ(s.epoch_stats().steps, 2);  // the run's own statistics are untouched
}

TEST(TrainState, EverythingSavedIsRestored) {
  const Config cfg = early_stopping(3);
  TrainState a(cfg);
  for (int i = 1; i <= 5; ++i) a.advance_step(i, 32);
  a.add_window(window_of(5, 4.0));
  EXPECT_FALSE(a.observe_eval(accuracy(0.8, 0.7), 1.0));
  EXPECT_FALSE(a.observe_eval(accuracy(0.7, 0.6), 2.0));  // one evaluation without improvement

  a.set_lr(0.0375);
  a.set_clipped_steps(4);

  TrainState b(cfg);
  b.from_meta(stored(a), "mem.ckpt", 32, 100);
  EXPECT_EQ(b.pos().step, 5);
  EXPECT_EQ(b.lr(), 0.0375) << "the last step's rate: the resume compares its schedule with it";
  EXPECT_EQ(b.clipped_steps(), 4) << "a run total, as the fp16 skip count is";
  EXPECT_EQ(b.pos().epoch, 0);
  EXPECT_EQ(b.pos().samples_done_in_epoch, 160);
  EXPECT_EQ(b.epoch_stats().to_json(), a.epoch_stats().to_json());
  EXPECT_EQ(stored(b).stop_rule, stored(a).stop_rule);
  EXPECT_EQ(b.last_eval().count, 0);  // restored scores are not this process's validation
  // The stop rule counts on: two more evaluations without improvement stop the run.
  EXPECT_FALSE(b.observe_eval(accuracy(0.7, 0.6), 3.0));
  EXPECT_TRUE(b.observe_eval(accuracy(0.7, 0.6), 4.0));
  EXPECT_TRUE(b.stopped());
  TrainState c(cfg);
  c.from_meta(stored(b), "mem.ckpt", 32, 100);
  EXPECT_TRUE(c.stopped());  // a run that stopped stays stopped
  EXPECT_EQ(c.stopped_early(), b.stopped_early());
}

// The review's finding: a resume restored the last validation with count 0, so the next
// checkpoint (before the next validation) recorded val_acc -1.
TEST(TrainState, ACheckpointAfterAResumeKeepsTheLastValidationScores) {
  const Config cfg;
  TrainState a(cfg);
  a.advance_step(1, 32);
  a.observe_eval(accuracy(0.75, 0.7), 1.0);
  const CheckpointMeta first = stored(a);
  EXPECT_DOUBLE_EQ(first.val_acc, 0.75);
  EXPECT_DOUBLE_EQ(first.val_f1, 0.7);

  TrainState b(cfg);
  b.from_meta(first, "mem.ckpt", 32, 100);
  b.advance_step(2, 32);
  const CheckpointMeta next = stored(b);
  EXPECT_DOUBLE_EQ(next.val_acc, 0.75);
  EXPECT_DOUBLE_EQ(next.val_f1, 0.7);
  EXPECT_DOUBLE_EQ(next.val_cer, -1.0);

  EvalResult seq;
  seq.count = 10;
  seq.sequence = true;
  seq.cer = 0.2;
  seq.wer = 0.4;
  b.observe_eval(seq, 2.0);
  TrainState c(cfg);
  c.from_meta(stored(b), "mem.ckpt", 32, 100);
  const CheckpointMeta again = stored(c);
  EXPECT_DOUBLE_EQ(again.val_cer, 0.2);
  EXPECT_DOUBLE_EQ(again.val_wer, 0.4);
  EXPECT_DOUBLE_EQ(again.val_acc, -1.0);
}

TEST(TrainState, NoValidationYetRecordsNone) {
  const Config cfg;
  TrainState s(cfg);
  s.observe_eval(EvalResult{}, 0.0);  // no validation split: count 0
  const CheckpointMeta m = stored(s);
  EXPECT_DOUBLE_EQ(m.val_acc, -1.0);
  EXPECT_DOUBLE_EQ(m.val_f1, -1.0);
  EXPECT_TRUE(m.stop_rule.empty());  // no rule configured, none stored
}

// A checkpoint whose epoch was consumed before its end work ran (a stop at its last step)
// resumes in that epoch, as it was: the trainer runs the end work (validation, the epoch's
// row) before the next epoch. It used to roll over here, so that epoch never got its row
// (a hostile finding).
TEST(TrainState, ACheckpointAtTheEpochsLastStepResumesInThatEpoch) {
  const Config cfg;
  TrainState a(cfg);
  for (int i = 1; i <= 4; ++i) a.advance_step(i, 32);
  a.add_window(window_of(4, 2.0));
  a.set_lr(0.05);
  TrainState b(cfg);
  b.from_meta(stored(a), "mem.ckpt", 32, 4);  // 4 steps per epoch: all done
  EXPECT_EQ(b.pos().epoch, 0);
  EXPECT_EQ(b.pos().samples_done_in_epoch, 128);
  EXPECT_EQ(b.epoch_stats().steps, 4) << "the epoch's row reports all of it";
  b.end_epoch();
  EXPECT_EQ(b.pos().epoch, 1);
  EXPECT_EQ(b.pos().samples_done_in_epoch, 0);
  // A checkpoint before 2026-11-28 (no lr in its meta) held that position after the end
  // work too (a --ckpt.every step at the epoch's end): it rolls over, as it did then.
  CheckpointMeta older = stored(a);
  older.lr = -1.0;
  TrainState c(cfg);
  c.from_meta(older, "old.ckpt", 32, 4);
  EXPECT_EQ(c.pos().epoch, 1);
  EXPECT_EQ(c.pos().samples_done_in_epoch, 0);
  EXPECT_EQ(c.epoch_stats().steps, 0);
}

TEST(TrainState, AnotherValidationRestartsTheStopRule) {
  Config cfg = early_stopping(2);
  TrainState a(cfg);
  a.observe_eval(accuracy(0.9, 0.9), 1.0);
  a.observe_eval(accuracy(0.8, 0.8), 2.0);  // one more without improvement would stop
  Config mirrored = cfg;
  mirrored.eval_hflip = true;  // a validated without
  TrainState b(mirrored);
  b.from_meta(stored(a), "mem.ckpt", 32, 100);
  EXPECT_FALSE(b.observe_eval(accuracy(0.5, 0.5), 3.0));  // the first result of a fresh rule
  EXPECT_FALSE(b.observe_eval(accuracy(0.5, 0.5), 4.0));
  EXPECT_TRUE(b.observe_eval(accuracy(0.5, 0.5), 5.0));
  // Another split (a hostile finding: --data.val-split test on resume kept the val split's
  // best and its early-stopping count). The split a checkpoint was validated on is recorded.
  CheckpointMeta on_val = stored(a);
  on_val.val_split = "val";
  Config on_test = cfg;
  on_test.val_split = "test";
  EXPECT_EQ(validation_change(on_val, on_test), "validated on split 'val', this run on 'test'");
  EXPECT_EQ(validation_change(on_val, cfg), "");  // the default split, val
  TrainState c(on_test);
  c.from_meta(on_val, "mem.ckpt", 32, 100);
  EXPECT_FALSE(c.observe_eval(accuracy(0.5, 0.5), 3.0));
  EXPECT_FALSE(c.observe_eval(accuracy(0.5, 0.5), 4.0));
  EXPECT_TRUE(c.observe_eval(accuracy(0.5, 0.5), 5.0));
  on_val.val_split = "";  // an older checkpoint: no split recorded, taken as this run's
  EXPECT_EQ(validation_change(on_val, on_test), "");
}

TEST(TrainState, ConfigParsesResumeSplitsAndClassWeightsOnce) {
  Config cfg;
  cfg.resume = "none";
  cfg.val_split = "none";
  cfg.class_weights = "auto";
  ASSERT_EQ(check_config(&cfg), "");
  EXPECT_EQ(cfg.resume_mode, ResumeMode::kNone);
  EXPECT_FALSE(cfg.use_val);
  EXPECT_TRUE(cfg.use_test);
  EXPECT_TRUE(cfg.weighted_classes);
  cfg.resume = "runs/a/checkpoints/step-000000010.ckpt";
  cfg.class_weights = "none";
  ASSERT_EQ(check_config(&cfg), "");
  EXPECT_EQ(cfg.resume_mode, ResumeMode::kPath);
  EXPECT_FALSE(cfg.weighted_classes);
}
