// run_rows: the trainer's rows in the one schema, and the log lines rendered from them (the
// log and metrics.jsonl show the same numbers).
#include <gtest/gtest.h>

#include <cmath>

#include "core/train/run_rows.hpp"

using namespace lockstep;

namespace {

WindowStats window() {
  WindowStats w;
  w.steps = w.finite_steps = 10;
  w.loss_sum = 5.0;
  w.samples = 640;
  w.correct = 480;
  w.times = Times{2.0, 0.2, 0.6, 0.8, 0.1, 0.3};
  return w;
}

}  // namespace

TEST(RunRows, TrainingScoresAndTimesGoIntoTheRow) {
  io::MetricsRow row = row_at(io::RowKind::kEpoch, 1, 57);
  add_training(&row, window(), 320.0, /*sequence=*/false);
  EvalResult ev;
  ev.count = 100;
  ev.loss = 0.25;
  ev.accuracy = 0.9;
  ev.macro_f1 = 0.85;
  add_scores(&row, ScoreSet::kVal, ev);
  add_scores(&row, ScoreSet::kTest, EvalResult{});  // nothing counted: nothing set
  EXPECT_EQ(row.epoch, 2);
  EXPECT_EQ(row.step, 57);
  EXPECT_DOUBLE_EQ(*row.train_loss, 0.5);
  EXPECT_DOUBLE_EQ(*row.train_acc, 0.75);
  EXPECT_DOUBLE_EQ(*row.seconds, 2.0);
  EXPECT_DOUBLE_EQ(*row.val_f1, 0.85);
  EXPECT_FALSE(row.test_loss.has_value());
  EXPECT_FALSE(row.val_cer.has_value());

  io::MetricsRow ctc = row_at(io::RowKind::kTrain, 0, 10);
  add_training(&ctc, window(), 320.0, /*sequence=*/true);
  EXPECT_FALSE(ctc.train_acc.has_value());  // a CTC model's training accuracy means nothing

  // A job that trained no step (it resumed only for the final evaluation) has no throughput:
  // none in the row, not 0 (report trusted the end row's 0 over the train rows' median).
  io::MetricsRow end = row_at(io::RowKind::kEnd, 1, 57);
  add_training(&end, WindowStats{}, WindowStats{}.samples_per_s(), false);
  EXPECT_FALSE(end.samples_per_s.has_value());
}

TEST(RunRows, LogLinesAreRenderedFromTheRow) {
  io::MetricsRow row = row_at(io::RowKind::kTrain, 1, 60);
  add_training(&row, window(), 320.0, false);
  row.lr = 0.05;
  const std::string summary = window().times.summary(10);
  EXPECT_EQ(train_line(row, 10, 3, 57, 10),
            "epoch 2/10 step 3/57 loss 0.5000 acc 0.7500 lr 0.05 320 samples/s; " + summary);
  row.loss_scale = 1024.0;
  row.skipped_steps = 2;
  EXPECT_EQ(train_line(row, 10, 3, 57, 10),
            "epoch 2/10 step 3/57 loss 0.5000 acc 0.7500 lr 0.05 320 samples/s loss-scale 1024 skipped 2; " + summary);

  io::MetricsRow epoch = row_at(io::RowKind::kEpoch, 1, 114);
  add_training(&epoch, window(), 320.0, false);
  EvalResult ev;
  ev.count = 10;
  ev.loss = 0.25;
  ev.accuracy = 0.9;
  ev.macro_f1 = 0.85;
  add_scores(&epoch, ScoreSet::kVal, ev);
  EXPECT_EQ(epoch_line(epoch, 10, 10),
            "epoch 2/10 done: loss 0.5000 acc 0.7500 val_loss 0.2500 val_acc 0.9000 val_f1 0.8500 320 samples/s 2.0 s; " +
                summary);
  io::MetricsRow seq = row_at(io::RowKind::kEpoch, 0, 5);
  add_training(&seq, window(), 320.0, true);
  EvalResult cer;
  cer.count = 3;
  cer.sequence = true;
  cer.loss = 1.5;
  cer.cer = 0.2;
  cer.wer = 0.5;
  add_scores(&seq, ScoreSet::kVal, cer);
  EXPECT_EQ(epoch_line(seq, 1, 10),
            "epoch 1/1 done: loss 0.5000 val_loss 1.5000 val_cer 0.2000 val_wer 0.5000 320 samples/s 2.0 s; " + summary);
}

// A resume with nothing to train and no end row: its final evaluation was cut, or (a hostile
// finding: it said so for both) the checkpoint is past a lowered --train.epochs / --max-steps.
TEST(RunRows, TheFinalEvaluationLineNamesWhyItRuns) {
  const std::string cut = final_evaluation_line(TrainPosition{30, 3, 0}, 3, 0);
  EXPECT_NE(cut.find("final evaluation never finished"), std::string::npos) << cut;
  EXPECT_EQ(final_evaluation_line(TrainPosition{30, 3, 0}, 3, 30), cut) << "--max-steps at the end is the end";
  EXPECT_EQ(final_evaluation_line(TrainPosition{23, 1, 288}, 1, 0),
            "the checkpoint (step 23, epoch 2) is already past this run's end (--train.epochs 1): nothing more to "
            "train; evaluating its weights now");
  const std::string both = final_evaluation_line(TrainPosition{23, 3, 0}, 2, 20);
  EXPECT_NE(both.find("(--train.epochs 2, --train.max-steps 20)"), std::string::npos) << both;
}

// fp16 with a start scale far above what the gradients bear (--train.loss-scale 1e38 halves
// 126 times before it reaches 1) skipped all 42 steps of a run that then said "finished", exit
// 0 (a hostile finding): the end warns that nothing trained.
TEST(RunRows, AnFp16RunThatSkippedEveryStepSaysNothingTrained) {
  EXPECT_EQ(nothing_trained_note(41, 42), "");
  EXPECT_EQ(nothing_trained_note(0, 0), "") << "no step taken (a resume of a finished run)";
  const std::string all = nothing_trained_note(42, 42);
  EXPECT_NE(all.find("skipped every one of this run's 42 steps"), std::string::npos) << all;
  EXPECT_NE(all.find("nothing trained"), std::string::npos) << all;
}

// What a resumed job says about its options (helper-46: dropout, weight decay and the train
// split changed on resume without a word): each change named, those a resume raises by
// design (epochs, max-steps, ckpt.every, eval-every) and those that change no result left
// out; a key the checkpoint's config lacks (a newer option) is no change.
TEST(RunRows, OptionsChangedOnResumeAreNamed) {
  const std::string then =
      "[data]\ntrain-split = train\n[model]\ndropout = 0.25\n[train]\nepochs = 2\nmax-steps = 0\nthreads = 1\n"
      "weight-decay = 0\n[run]\ndir = a\n";
  const std::string now =
      "[data]\ntrain-split = val\n[model]\ndropout = 0.5\n[train]\nepochs = 9\nmax-steps = 40\nthreads = 4\n"
      "weight-decay = 0.1\nnew-option = 1\n[run]\ndir = b\n";
  EXPECT_EQ(config_changes(then, now, /*resumed=*/true),
            "data.train-split train -> val, model.dropout 0.25 -> 0.5, train.weight-decay 0 -> 0.1");
  EXPECT_EQ(config_changes(then, now),
            "data.train-split train -> val, model.dropout 0.25 -> 0.5, train.epochs 2 -> 9, train.max-steps 0 -> 40, "
            "train.weight-decay 0 -> 0.1");
  EXPECT_EQ(config_changes("", now, true), "") << "a checkpoint that recorded no config";
  EXPECT_EQ(config_changes(then, then, true), "");
}
