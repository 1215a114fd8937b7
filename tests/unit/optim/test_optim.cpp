// core/optim: class weights and the loss, optimizers and LR scaling, gradient clipping,
// the fp16 loss scaler, the step schedule.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "core/base/error.hpp"
#include "core/optim/loss_scaler.hpp"
#include "core/optim/loss.hpp"
#include "core/optim/lr_schedule.hpp"
#include "core/optim/optimizer.hpp"
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
  EXPECT_ERROR_CONTAINS(class_weights("1,x", {1, 2}), "'x' is not a number in [0, 1e30]");
  EXPECT_ERROR_CONTAINS(class_weights("1,-2", {1, 2}), "'-2'");
  EXPECT_ERROR_CONTAINS(class_weights("1,1e39", {1, 2}), "'1e39' is not a number in [0, 1e30]");
  EXPECT_EQ(class_weights("1,1e-400", {1, 2}), (std::vector<double>{1, 0}));  // an underflow is 0, not "no number"
  EXPECT_ERROR_CONTAINS(class_weights("1,1e999", {1, 2}), "'1e999' is not a number in [0, 1e30]");
  EXPECT_ERROR_CONTAINS(class_weights("1,2,", {1, 2}), "ends with a comma");
  EXPECT_ERROR_CONTAINS(class_weights("0,0", {1, 2}), "every weight is 0");
  const std::string table = class_weight_table(w, {60, 30, 10, 0}, {"walk", "sit", "lie", "run"});
  EXPECT_NE(table.find("0 walk"), std::string::npos);
  EXPECT_NE(table.find("60.0%"), std::string::npos);
  EXPECT_NE(table.find("2.500"), std::string::npos);
}

TEST(Loss, WeightsAndSmoothingFollowTheirDefinitions) {
  const auto logits = torch::tensor({2.0f, 0.0f, -1.0f, 0.5f, 1.5f, 0.0f}).view({2, 3});
  const auto y = torch::tensor(std::vector<int64_t>{0, 1});
  const auto logp = torch::log_softmax(logits, 1);
  const double plain = Loss({}, 1.0, 0.0, torch::kCPU)(logits, y).item<double>();
  EXPECT_NEAR(plain, -(logp[0][0] + logp[1][1]).item<double>() / 2, 1e-6);
  // Weighted: sum w_y * nll / (batch * the weights' mean over the training split).
  const double mean_w = mean_class_weight({1.0, 3.0, 1.0}, {50, 25, 25});  // (50 + 75 + 25) / 100
  EXPECT_DOUBLE_EQ(mean_w, 1.5);
  const double weighted = Loss({1.0, 3.0, 1.0}, mean_w, 0.0, torch::kCPU)(logits, y).item<double>();
  EXPECT_NEAR(weighted, -(logp[0][0] + 3 * logp[1][1]).item<double>() / (2 * 1.5), 1e-6);
  // With smoothing too: PyTorch's weighted sum, over the same constant.
  const auto ref = torch::nn::functional::cross_entropy(
      logits, y,
      torch::nn::functional::CrossEntropyFuncOptions().weight(torch::tensor({1.0f, 3.0f, 1.0f})).label_smoothing(0.1).reduction(
          torch::kSum));
  EXPECT_NEAR(Loss({1.0, 3.0, 1.0}, mean_w, 0.1, torch::kCPU)(logits, y).item<double>(), ref.item<double>() / 3.0, 1e-6);
  // A batch of classes that weigh 0: a loss of 0 and no gradient, not NaN; with smoothing,
  // only its smoothing terms (finite).
  const auto l = logits.clone().requires_grad_();
  const torch::Tensor zero = Loss({0.0, 0.0, 1.0}, 0.5, 0.0, torch::kCPU)(l, y);
  zero.backward();
  EXPECT_EQ(zero.item<double>(), 0.0);
  EXPECT_TRUE(torch::isfinite(l.grad()).all().item<bool>());
  EXPECT_TRUE(std::isfinite(Loss({0.0, 0.0, 1.0}, 0.5, 0.1, torch::kCPU)(logits, y).item<double>()));
  // Smoothing eps: (1 - eps) nll + eps * mean over classes of -log p.
  const double eps = 0.1;
  const double smooth = Loss({}, 1.0, eps, torch::kCPU)(logits, y).item<double>();
  const double expected = (1 - eps) * plain + eps * (-logp.mean(1)).mean().item<double>();
  EXPECT_NEAR(smooth, expected, 1e-6);
  EXPECT_ERROR_CONTAINS(mean_class_weight({0.0, 1.0}, {10, 0}), "every class that has training samples weighs 0");
}

// helper-42: the weighted loss of one batch of 12 and the mean of two of 6 (grad-accum 2, or
// 2 ranks) differed by 10% (each divided by its own weight sum). Now the same, for any split.
TEST(Loss, AWeightedBatchSplitAnyWayAveragesToTheWholeBatch) {
  torch::manual_seed(3);
  const auto logits = torch::randn({12, 3});
  const auto y = torch::tensor(std::vector<int64_t>{0, 0, 0, 0, 1, 2, 2, 2, 1, 1, 2, 0});
  // Weights with a class that weighs 0, with and without smoothing.
  for (const auto& [w, smoothing] : {std::make_pair(std::vector<double>{1.0, 0.5, 3.0}, 0.0),
                                     std::make_pair(std::vector<double>{1.0, 0.0, 3.0}, 0.0),
                                     std::make_pair(std::vector<double>{1.0, 0.0, 3.0}, 0.1)}) {
    const Loss loss(w, mean_class_weight(w, {4, 3, 5}), smoothing, torch::kCPU);
    const double whole = loss(logits, y).item<double>();
    for (const int64_t parts : {2, 3, 4, 6}) {
      double mean = 0;
      for (int64_t p = 0; p < parts; ++p) {
        const int64_t n = 12 / parts;
        mean += loss(logits.narrow(0, p * n, n), y.narrow(0, p * n, n)).item<double>() / static_cast<double>(parts);
      }
      EXPECT_NEAR(mean, whole, 1e-6) << parts << " parts, weight of class 1 " << w[1] << ", smoothing " << smoothing;
    }
  }
}

TEST(Optimizer, KindsLrAndScalingRules) {
  auto p = torch::ones({3}).requires_grad_(true);
  for (const OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdam, OptimizerKind::kAdamW}) {
    auto opt = make_optimizer({p}, OptimizerOptions{kind, 0.1});
    set_lr(*opt, 0.02);
    EXPECT_DOUBLE_EQ(opt->param_groups()[0].options().get_lr(), 0.02) << to_string(kind);
  }
  OptimizerOptions nesterov{OptimizerKind::kSgd, 0.1, 0.0, true};
  EXPECT_THROW(make_optimizer({p}, nesterov), UsageError);  // nesterov needs momentum
  EXPECT_DOUBLE_EQ(scaled_lr(0.1, LrScaling::kNone, 8), 0.1);
  EXPECT_DOUBLE_EQ(scaled_lr(0.1, LrScaling::kLinear, 8), 0.8);
  EXPECT_DOUBLE_EQ(scaled_lr(0.1, LrScaling::kSqrt, 4), 0.2);
}

TEST(Optimizer, NesterovTakesADifferentStepThanPlainMomentum) {
  auto a = torch::ones({2}).requires_grad_(true), b = torch::ones({2}).requires_grad_(true);
  auto plain = make_optimizer({a}, OptimizerOptions{OptimizerKind::kSgd, 0.1, 0.9, false});
  auto nest = make_optimizer({b}, OptimizerOptions{OptimizerKind::kSgd, 0.1, 0.9, true});
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

// No parameter has a gradient (all frozen, or unused this step): a float norm of 0 made like
// the parameters (on their device: the CUDA step adds it to device counters).
TEST(ClipGradNorm, NoGradientIsANormOfZeroLikeTheParameters) {
  auto p = torch::zeros({2}, torch::kDouble).requires_grad_(true);
  const torch::Tensor n = clip_grad_norm({p}, 1.0);
  EXPECT_EQ(n.scalar_type(), torch::kFloat);
  EXPECT_EQ(n.device(), p.device());
  EXPECT_EQ(n.item<double>(), 0.0);
  EXPECT_EQ(clip_grad_norm({}, 1.0).item<double>(), 0.0);
}

TEST(LossScaler, SkipsNonFiniteStepsHalvesAndGrows) {
  auto p = torch::zeros({2}).requires_grad_(true);
  LossScaler s(true, torch::kCPU, 1024.0, /*growth_interval=*/2);
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
  LrSchedule s{Schedule::kStep, 1.0, 2, 100, 0.0, 10, 0.5};
  EXPECT_DOUBLE_EQ(s.at(0), 0.5);  // warmup
  EXPECT_DOUBLE_EQ(s.at(2), 1.0);
  EXPECT_DOUBLE_EQ(s.at(11), 1.0);
  EXPECT_DOUBLE_EQ(s.at(12), 0.5);
  EXPECT_DOUBLE_EQ(s.at(32), 0.125);
}
