// The trainer's pure and single-process parts: class weights and loss, classification
// metrics, optimizers and LR scaling, gradient clipping, the fp16 loss scaler, the
// progress bar text, TensorBoard records, the background checkpoint writer, RNG state.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <sys/resource.h>
#include <fstream>
#include <cstring>
#include <iterator>

#include "core/amp.hpp"
#include "core/host_allocator.hpp"
#include "core/checkpoint_writer.hpp"
#include "core/class_metrics.hpp"
#include "core/error.hpp"
#include "core/loss.hpp"
#include "core/lr_schedule.hpp"
#include "core/optimizer.hpp"
#include "core/progress.hpp"
#include "core/train_state.hpp"
#include "io/file_util.hpp"
#include "io/tb_writer.hpp"
#include "test_helpers.hpp"

using namespace lockstep;

TEST(ClassWeights, AutoIsInverseFrequencyNormalisedToOneWhenBalanced) {
  EXPECT_EQ(class_weights("auto", {10, 10, 10}), (std::vector<double>{1, 1, 1}));
  const auto w = class_weights("auto", {60, 30, 10, 0});
  EXPECT_DOUBLE_EQ(w[0], 100.0 / (4 * 60));
  EXPECT_DOUBLE_EQ(w[2], 100.0 / (4 * 10));
  EXPECT_DOUBLE_EQ(w[3], 0.0);  // no samples: weight 0
  EXPECT_TRUE(class_weights("none", {1, 2}).empty());
  EXPECT_EQ(class_weights("1,2.5", {1, 2}), (std::vector<double>{1, 2.5}));
  EXPECT_ERROR_CONTAINS(class_weights("1,2", {1, 2, 3}), "2 weights for a dataset of 3 classes");
  EXPECT_ERROR_CONTAINS(class_weights("1,x", {1, 2}), "'x' is not a non-negative number");
  EXPECT_ERROR_CONTAINS(class_weights("1,-2", {1, 2}), "'-2'");
  const std::string table = class_weight_table(w, {60, 30, 10, 0}, {"walk", "sit", "lie", "run"});
  EXPECT_NE(table.find("0 walk"), std::string::npos);
  EXPECT_NE(table.find("60.0%"), std::string::npos);
  EXPECT_NE(table.find("2.500"), std::string::npos);
}

TEST(Loss, WeightsAndSmoothingFollowTheirDefinitions) {
  const auto logits = torch::tensor({2.0f, 0.0f, -1.0f, 0.5f, 1.5f, 0.0f}).view({2, 3});
  const auto y = torch::tensor(std::vector<int64_t>{0, 1});
  const auto logp = torch::log_softmax(logits, 1);
  const double plain = Loss({}, 0.0, torch::kCPU)(logits, y).item<double>();
  EXPECT_NEAR(plain, -(logp[0][0] + logp[1][1]).item<double>() / 2, 1e-6);
  // Weighted: sum w_y * nll / sum w_y.
  const double weighted = Loss({1.0, 3.0, 1.0}, 0.0, torch::kCPU)(logits, y).item<double>();
  EXPECT_NEAR(weighted, -(logp[0][0] + 3 * logp[1][1]).item<double>() / 4, 1e-6);
  // Smoothing eps: (1 - eps) nll + eps * mean over classes of -log p.
  const double eps = 0.1;
  const double smooth = Loss({}, eps, torch::kCPU)(logits, y).item<double>();
  const double expected = (1 - eps) * plain + eps * (-logp.mean(1)).mean().item<double>();
  EXPECT_NEAR(smooth, expected, 1e-6);
}

TEST(ClassMetrics, MacroF1RecallAndPrecisionFromAConfusionMatrix) {
  // rows true, columns predicted
  const std::vector<int64_t> cm{5, 1, 0,   //
                                2, 3, 0,   //
                                0, 0, 0};  // class 2: no samples, never predicted
  const ClassMetrics m = class_metrics(cm, 3);
  EXPECT_EQ(m.count, 11);
  EXPECT_DOUBLE_EQ(m.accuracy, 8.0 / 11);
  EXPECT_DOUBLE_EQ(m.recall[0], 5.0 / 6);
  EXPECT_DOUBLE_EQ(m.precision[1], 3.0 / 4);
  EXPECT_TRUE(std::isnan(m.recall[2]));
  const double f1_0 = 2.0 * 5 / (6 + 7), f1_1 = 2.0 * 3 / (5 + 4);
  EXPECT_DOUBLE_EQ(m.macro_f1, (f1_0 + f1_1) / 2);  // class 2 left out
  const std::string table = per_class_table(m, cm, {"a", "b", "c"});
  EXPECT_NE(table.find("0 a"), std::string::npos);
  EXPECT_NE(table.find("macro-F1 0."), std::string::npos);
  EXPECT_NE(confusion_table(cm, 3).find("true\\pred"), std::string::npos);
}

TEST(Optimizer, KindsLrAndScalingRules) {
  auto p = torch::ones({3}).requires_grad_(true);
  for (const char* kind : {"sgd", "adam", "adamw"}) {
    auto opt = make_optimizer({p}, OptimizerOptions{kind, 0.1});
    set_lr(*opt, 0.02);
    EXPECT_DOUBLE_EQ(opt->param_groups()[0].options().get_lr(), 0.02) << kind;
  }
  EXPECT_THROW(make_optimizer({p}, OptimizerOptions{"lamb", 0.1}), UsageError);
  OptimizerOptions nesterov{"sgd", 0.1, 0.0, true};
  EXPECT_THROW(make_optimizer({p}, nesterov), UsageError);  // nesterov needs momentum
  EXPECT_DOUBLE_EQ(scaled_lr(0.1, "none", 8), 0.1);
  EXPECT_DOUBLE_EQ(scaled_lr(0.1, "linear", 8), 0.8);
  EXPECT_DOUBLE_EQ(scaled_lr(0.1, "sqrt", 4), 0.2);
}

TEST(Optimizer, NesterovTakesADifferentStepThanPlainMomentum) {
  auto a = torch::ones({2}).requires_grad_(true), b = torch::ones({2}).requires_grad_(true);
  auto plain = make_optimizer({a}, OptimizerOptions{"sgd", 0.1, 0.9, false});
  auto nest = make_optimizer({b}, OptimizerOptions{"sgd", 0.1, 0.9, true});
  for (int i = 0; i < 2; ++i)
    for (auto [t, o] : {std::pair{a, plain.get()}, std::pair{b, nest.get()}}) {
      o->zero_grad();
      (t * t).sum().backward();
      o->step();
    }
  EXPECT_FALSE(torch::allclose(a, b));
}

TEST(ClipGradNorm, ScalesTheGlobalNormDownToTheLimitOnly) {
  auto a = torch::zeros({2}).requires_grad_(true), b = torch::zeros({1}).requires_grad_(true);
  a.mutable_grad() = torch::tensor({3.0f, 0.0f});
  b.mutable_grad() = torch::tensor({4.0f});
  EXPECT_NEAR(clip_grad_norm({a, b}, 1.0).item<double>(), 5.0, 1e-6);
  EXPECT_NEAR(a.grad()[0].item<double>(), 0.6, 1e-5);
  EXPECT_NEAR(b.grad()[0].item<double>(), 0.8, 1e-5);
  clip_grad_norm({a, b}, 10.0);  // under the limit: unchanged
  EXPECT_NEAR(b.grad()[0].item<double>(), 0.8, 1e-5);
}

TEST(LossScaler, SkipsNonFiniteStepsHalvesAndGrows) {
  auto p = torch::zeros({2}).requires_grad_(true);
  LossScaler s(true, 1024.0, /*growth_interval=*/2);
  EXPECT_DOUBLE_EQ(s.scale(torch::tensor(1.0f)).item<double>(), 1024.0);
  p.mutable_grad() = torch::tensor({2048.0f, 1024.0f});
  EXPECT_TRUE(s.unscale_and_update({p}));
  EXPECT_FLOAT_EQ(p.grad()[0].item<float>(), 2.0f);  // unscaled
  p.mutable_grad() = torch::tensor({INFINITY, 1.0f});
  EXPECT_FALSE(s.unscale_and_update({p}));
  EXPECT_DOUBLE_EQ(s.current_scale(), 512.0);
  EXPECT_EQ(s.skipped(), 1);
  for (int i = 0; i < 2; ++i) {
    p.mutable_grad() = torch::ones({2});
    EXPECT_TRUE(s.unscale_and_update({p}));
  }
  EXPECT_DOUBLE_EQ(s.current_scale(), 1024.0);  // two finite steps in a row: doubled
  LossScaler restored(true);
  restored.load_state(s.state());
  EXPECT_DOUBLE_EQ(restored.current_scale(), 1024.0);
  EXPECT_EQ(restored.skipped(), 1);
  LossScaler off(false);
  p.mutable_grad() = torch::tensor({NAN, 1.0f});
  EXPECT_TRUE(off.unscale_and_update({p}));  // bf16/none: no scaling, no skipping
}

TEST(LrSchedule, StepDecaysEveryStepSizeAfterWarmup) {
  LrSchedule s{"step", 1.0, 2, 100, 0.0, 10, 0.5};
  EXPECT_DOUBLE_EQ(s.at(0), 0.5);  // warmup
  EXPECT_DOUBLE_EQ(s.at(2), 1.0);
  EXPECT_DOUBLE_EQ(s.at(11), 1.0);
  EXPECT_DOUBLE_EQ(s.at(12), 0.5);
  EXPECT_DOUBLE_EQ(s.at(32), 0.125);
}

TEST(Progress, LineAndDurations) {
  Progress p;
  p.epoch = 2;
  p.epochs = 15;
  p.step = 234;
  p.steps = 468;
  p.loss = 0.31214;
  p.accuracy = 0.8871;
  p.samples_per_s = 1043.4;
  p.eta_s = 724;
  EXPECT_EQ(progress_line(p, 10), "epoch 2/15 [#####-----] 234/468 loss 0.3121 acc 0.887 1043 samples/s ETA 12:04");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(-1), "--:--");
}

TEST(TensorBoard, Crc32cAndRecordFraming) {
  EXPECT_EQ(io::crc32c("123456789", 9), 0xE3069283u);  // the standard check value
  const std::string dir = lockstep::testing::fresh_dir("tb");
  std::string path;
  {
    io::TbWriter w(dir, "host");
    w.scalars(7, {{"train/loss", 0.5}});
    path = w.path();
  }
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Two records; each: u64 length, u32 crc, data, u32 crc.
  uint64_t len = 0;
  std::memcpy(&len, bytes.data(), 8);
  const size_t second = 8 + 4 + len + 4;
  ASSERT_GT(bytes.size(), second + 12);
  EXPECT_NE(bytes.substr(12, len).find("brain.Event:2"), std::string::npos);
  uint64_t len2 = 0;
  std::memcpy(&len2, bytes.data() + second, 8);
  EXPECT_EQ(bytes.size(), second + 8 + 4 + len2 + 4);
  EXPECT_NE(bytes.substr(second + 12, len2).find("train/loss"), std::string::npos);
}

TEST(CheckpointWriter, RunsJobsInOrderAndReportsTheirErrors) {
  CheckpointWriter w;
  std::vector<int> done;
  w.submit([&] { done.push_back(1); });
  w.submit([&] { done.push_back(2); });
  w.wait();
  EXPECT_EQ(done, (std::vector<int>{1, 2}));
  w.submit([] { throw Error("disk full"); });
  EXPECT_ERROR_CONTAINS(w.wait(), "disk full");
  w.submit([&] { done.push_back(3); });  // the writer survives a failed job
  w.wait();
  EXPECT_EQ(done.size(), 3u);
}

TEST(TrainState, RngStateRoundTripRepeatsTheRandomStream) {
  torch::manual_seed(3);
  const auto state = rng_state_bytes(torch::kCPU);
  const auto a = torch::rand({4});
  set_rng_state_bytes(state, torch::kCPU);
  EXPECT_TRUE(torch::equal(a, torch::rand({4})));
}

TEST(HostAllocator, AStepsWorthOfActivationsIsReusedNotFaultedInAgain) {
  ASSERT_TRUE(configure_host_allocator() || std::getenv("MALLOC_MMAP_THRESHOLD_"));
  const auto faults = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
  };
  // One "step": ten 6 MiB activations allocated, touched, freed. With glibc's defaults the
  // freed 60 MiB at the heap top exceeds the (adaptive) trim threshold and goes back to
  // the kernel: every step faults ~15000 pages in again.
  const auto step = [] {
    std::vector<char*> blocks;
    for (int i = 0; i < 10; ++i) {
      blocks.push_back(static_cast<char*>(std::malloc(6 << 20)));
      std::memset(blocks.back(), 1, 6 << 20);
    }
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) std::free(*it);
  };
  step();
  step();
  const long before = faults();
  for (int i = 0; i < 5; ++i) step();
  EXPECT_LT(faults() - before, 1000) << "freed activation memory went back to the kernel between steps";
}
