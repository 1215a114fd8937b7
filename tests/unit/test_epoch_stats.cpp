// The numbers of log, epoch and end rows (epoch_stats), the step phase timer, and the
// resume compatibility check. Each case below reported a wrong number before issue 11.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <thread>

#include "core/epoch_stats.hpp"
#include "core/model.hpp"
#include "core/nccl_bootstrap.hpp"
#include "core/preflight.hpp"
#include "core/step_timer.hpp"
#include "core/train_state.hpp"
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

TEST(ResumeCheck, AnotherWidthOrOptimizerIsOneLineNotALibTorchAssert) {
  io::DatasetSpec spec = lockstep::testing::tiny_spec(3);
  spec.sample_shape = {1, 8, 8};
  Config cfg;
  cfg.model = "cnn";
  cfg.model_width = 8;
  auto model = make_model(ModelOptions{"cnn", 0.0, 8, 18}, spec);
  CheckpointMeta m;
  m.model = "cnn";
  m.model_width = 8;
  m.optimizer = "sgd";
  m.param_shapes = fnv1a64(param_shapes_text(*model));
  EXPECT_EQ(resume_mismatch(m, cfg, *model, "a.ckpt"), "");
  m.model_width = 16;
  EXPECT_NE(resume_mismatch(m, cfg, *model, "a.ckpt").find("a.ckpt: cannot continue this run from a checkpoint of "
                                                           "--model.width 16 (this run: 8)"),
            std::string::npos);
  m.model_width = 8;
  cfg.optimizer = "adam";
  EXPECT_NE(resume_mismatch(m, cfg, *model, "a.ckpt").find("--train.optimizer sgd (this run: adam)"), std::string::npos);
  cfg.optimizer = "sgd";
  m.param_shapes = 42;
  EXPECT_NE(resume_mismatch(m, cfg, *model, "a.ckpt").find("parameter names or shapes differ"), std::string::npos);
}

TEST(CheckpointMetaErrors, AMalformedFieldIsNamed) {
  EXPECT_ERROR_CONTAINS(meta_from_json("{\"step\": \"twelve\"}", "m.ckpt"), "m.ckpt: checkpoint metadata field 'step'");
  EXPECT_ERROR_CONTAINS(meta_from_json("{not json", "m.ckpt"), "m.ckpt: checkpoint metadata is not valid JSON");
}

TEST(CheckpointMeta, BytesThatAreNotUtf8DoNotBreakTheHeader) {
  CheckpointMeta m;
  m.model = "cnn";
  m.batch_size = 1;
  m.sample_shape = {1};
  m.config_ini = "[run]\ndir = runs/caf\xe9\xff\n";  // a Latin-1 path
  const CheckpointMeta r = meta_from_json(meta_to_json(m), "x");
  EXPECT_EQ(r.config_ini.substr(0, 18), "[run]\ndir = runs/c");
}

TEST(GpuPlacement, TwoRanksOnOneGpuAreNamed) {
  EXPECT_EQ(shared_gpu_problem({"n1", "n1", "n2"}, {"0000:1b:00.0", "0000:1c:00.0", "0000:1b:00.0"}, {0, 1, 0}), "");
  const std::string p = shared_gpu_problem({"n1", "n1"}, {"0000:1b:00.0", "0000:1b:00.0"}, {0, 0});
  EXPECT_NE(p.find("ranks 0 and 1 share GPU 0 (PCI 0000:1b:00.0) on host n1"), std::string::npos) << p;
}
