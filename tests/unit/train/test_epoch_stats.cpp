// core/train: the numbers of log, epoch and end rows (epoch_stats) and the step phase
// timer. Each case below reported a wrong number before issue 11.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <thread>

#include "core/train/epoch_stats.hpp"
#include "core/train/step_timer.hpp"
#include "test_helpers.hpp"

using namespace lockstep;

namespace {

// One process standing in for WORLD ranks that all saw the same values.
AllreduceSum fake_world(int world) {
  return [world](double* v, int n) {
    for (int i = 0; i < n; ++i) v[i] *= world;
  };
}

void add(LogWindow& w, double loss, int64_t correct) {
  w.add_step(torch::tensor(loss, torch::kDouble), torch::tensor(correct, torch::kLong));
}

}  // namespace

TEST(EpochStats, AnEmptyWindowAddsNothingInsteadOfNaN) {
  LogWindow w(/*global_batch=*/8, /*world=*/2, /*skip_nonfinite=*/false);
  w.restart(1);
  WindowStats epoch;
  for (int s = 0; s < 4; ++s) add(w, 1.0 + s, 2);  // steps 1..4, log every 4
  epoch += w.close(fake_world(2), 0.1, 5);
  // The epoch ends at step 4 too: its last window is empty (the loss nan / null bug).
  epoch += w.close(fake_world(2), 0.1, 5);
  EXPECT_EQ(epoch.steps, 4);
  EXPECT_DOUBLE_EQ(epoch.loss(), 2.5);
  EXPECT_DOUBLE_EQ(epoch.acc(), (4 * 2 * 2.0) / (4 * 8));
  EXPECT_TRUE(std::isnan(WindowStats{}.loss()));
}

TEST(EpochStats, ACheckpointPeeksWithoutDiscardingTheWindow) {
  LogWindow w(4, 1, false);
  w.restart(1);
  add(w, 1.0, 1);
  add(w, 3.0, 3);
  const WindowStats at_ckpt = w.peek(fake_world(1), 0.1);  // --ckpt.every inside the window
  EXPECT_EQ(at_ckpt.steps, 2);
  add(w, 5.0, 2);
  const WindowStats row = w.close(fake_world(1), 0.1, 4);
  EXPECT_EQ(row.steps, 3);  // before: the checkpoint emptied the window, the row had 1 step
  EXPECT_DOUBLE_EQ(row.loss(), 3.0);
  EXPECT_DOUBLE_EQ(row.correct, 6.0);
}

TEST(EpochStats, ANonFiniteLossNamesItsStepUnlessFp16SkipsIt) {
  LogWindow w(4, 1, false);
  w.restart(11);
  add(w, 1.0, 1);
  add(w, std::nan(""), 1);
  EXPECT_ERROR_CONTAINS(w.peek(fake_world(1), 0.5), "training loss is nan at step 12 (lr 0.5");
  LogWindow fp16(4, 1, true);
  fp16.restart(1);
  add(fp16, 2.0, 1);
  add(fp16, INFINITY, 1);
  const WindowStats s = fp16.close(fake_world(1), 0.5, 3);
  EXPECT_EQ(s.steps, 2);
  EXPECT_EQ(s.finite_steps, 1);
  EXPECT_DOUBLE_EQ(s.loss(), 2.0);
}

TEST(EpochStats, SumsRoundTripThroughACheckpoint) {
  WindowStats s;
  s.steps = 7;
  s.finite_steps = 6;
  s.loss_sum = 3.25;
  s.correct = 40;
  s.samples = 56;
  s.times.seconds = 1.5;
  s.times.exposed_comm = 0.25;
  const WindowStats r = WindowStats::from_json(s.to_json(), "x.ckpt");
  EXPECT_EQ(r.steps, 7);
  EXPECT_DOUBLE_EQ(r.loss(), s.loss());
  EXPECT_DOUBLE_EQ(r.times.exposed_comm, 0.25);
  EXPECT_ERROR_CONTAINS(WindowStats::from_json("{\"steps\": 1}", "x.ckpt"), "x.ckpt: malformed epoch statistics");
}

// Throughput is what was trained over the time it took. Before: steps x the current global
// batch, so an epoch resumed at another world size or batch reported the earlier job's steps
// at the new batch (helper-40: 288 samples for 352 trained).
TEST(EpochStats, SamplesPerSecondCountsTheSamplesEachStepTrained) {
  WindowStats first;  // 10 steps of a 2-rank job at 16 per rank
  first.steps = 10;
  first.samples = 320;
  first.times.seconds = 1.0;
  WindowStats second;  // 2 steps after a resume on 1 rank
  second.steps = 2;
  second.samples = 32;
  second.times.seconds = 0.1;
  WindowStats epoch = first;
  epoch += second;
  EXPECT_DOUBLE_EQ(epoch.samples_per_s(), 352 / 1.1);
  EXPECT_EQ(WindowStats{}.samples_per_s(), 0.0) << "no step: no throughput, not a division by zero";
}

TEST(StepTimer, HostPhasesAddUpAndGapsBetweenStepsAreNoPhase) {
  StepTimer t(torch::kCPU);
  EXPECT_FALSE(t.on_device());
  for (int step = 0; step < 2; ++step) {
    t.begin_step();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    t.mark(Phase::kData);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    t.mark(Phase::kForward);
    t.mark(Phase::kBackward);
    t.mark(Phase::kComm);
    t.mark(Phase::kOptimizer);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // logging between steps
  }
  Times times;
  t.collect(&times);
  EXPECT_GE(times.data_wait, 0.009);
  EXPECT_GE(times.forward, 0.019);
  EXPECT_LT(times.data_wait + times.forward + times.backward + times.exposed_comm + times.optimizer, 0.055);
  Times again;
  t.collect(&again);
  EXPECT_EQ(again.forward, 0.0);
}
