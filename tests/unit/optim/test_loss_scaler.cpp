// Issue 32 (the step on the device): the fp16 loss scaler keeps scale, growth count, found-inf
// and skips on the device. Against the host rule it replaces (the LossScaler before issue 32,
// written out below as the reference): the same scale trajectory, skip count and state; and
// SGD's fused kernel skipping on the device's found-inf gives the parameters and momentum that
// the host decision (skip the optimizer) gives, a skipped first step included.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "core/optim/fused_step.hpp"
#include "core/optim/loss_scaler.hpp"
#include "core/optim/optimizer.hpp"

using namespace lockstep;

namespace {

// The host rule, as lockstep had it: halve (not below 1) and count on a non-finite step,
// double after INTERVAL finite steps in a row.
struct HostRule {
  double scale;
  int64_t interval, good = 0, skipped = 0;
  void update(bool finite) {
    if (!finite) {
      scale = std::max(scale * 0.5, 1.0);
      good = 0;
      ++skipped;
    } else if (++good >= interval) {
      scale *= 2.0;
      good = 0;
    }
  }
};

}  // namespace

TEST(LossScaler, DeviceTrajectoryEqualsTheHostRule) {
  LossScaler dev(true, torch::kCPU, 1024.0, /*growth_interval=*/3);
  HostRule ref{1024.0, 3};
  auto p = torch::zeros({4}).requires_grad_(true);
  std::set<int> bad{0, 1, 5, 9, 21};
  for (int s = 30; s < 44; ++s) bad.insert(s);  // 14 in a row: down to the floor of 1
  double lowest = 1e30;
  for (int step = 0; step < 50; ++step) {
    p.mutable_grad() = torch::full({4}, 3.0f) * static_cast<float>(dev.current_scale());
    if (bad.count(step)) p.mutable_grad()[step % 4] = step % 2 ? NAN : INFINITY;
    const torch::Tensor found = dev.unscale_and_update_async({p});
    ref.update(!bad.count(step));
    ASSERT_TRUE(found.defined());
    EXPECT_EQ(found.item<float>() != 0, bad.count(step) == 1) << "step " << step;
    EXPECT_DOUBLE_EQ(dev.current_scale(), ref.scale) << "step " << step;
    EXPECT_EQ(dev.skipped(), ref.skipped) << "step " << step;
    lowest = std::min(lowest, dev.current_scale());
    if (!bad.count(step)) EXPECT_TRUE(p.grad().eq(3.0f).all().item<bool>()) << "unscaled exactly, step " << step;
  }
  EXPECT_DOUBLE_EQ(lowest, 1.0) << "14 overflows in a row reach the floor";
  // The checkpoint state carries the growth count: a restored scaler continues the same way.
  LossScaler restored(true, torch::kCPU, 65536.0, /*growth_interval=*/3);  // the interval is the config's
  restored.load_state(dev.state());
  EXPECT_EQ(restored.state(), dev.state());
  for (int step = 0; step < 4; ++step) {
    for (LossScaler* s : {&dev, &restored}) {
      p.mutable_grad() = torch::ones({4});
      s->unscale_and_update_async({p});
    }
    EXPECT_DOUBLE_EQ(restored.current_scale(), dev.current_scale());
  }
  LossScaler off(false);
  p.mutable_grad() = torch::tensor({NAN, 1.0f, 1.0f, 1.0f});
  EXPECT_FALSE(off.unscale_and_update_async({p}).defined()) << "bf16/none: no scaling, no skipping";
  EXPECT_TRUE(off.unscale_and_update({p}));
}

// A run whose gradients are not finite even unscaled would skip every step to the end and
// finish as if trained (found by reading a --lr 1e20 fp16 run: 59 of 60 steps skipped, exit
// 0, a checkpoint). check_progress stops it once kStalledSteps steps in a row were tried at
// the floor of 1 and skipped, counted on the device wherever the checks fall; overflows above
// the floor, a finite step between, or one overflow of a run started at scale 1 are training.
TEST(LossScaler, StepsSkippedInARowAtTheFloorStopTheRun) {
  auto p = torch::zeros({4}).requires_grad_(true);
  const auto step_with = [&p](LossScaler& s, bool finite) {
    p.mutable_grad() = finite ? torch::ones({4}) : torch::full({4}, INFINITY);
    s.unscale_and_update_async({p});
  };
  const auto stops = [](const LossScaler& s, int64_t step) {
    try {
      s.check_progress(step);
      return std::string();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  };
  ASSERT_EQ(LossScaler::kStalledSteps, 10);
  LossScaler s(true, torch::kCPU, 4.0, 2000);
  step_with(s, false);  // at 4 -> 2
  step_with(s, false);  // at 2 -> 1: not yet at the floor when tried
  for (int i = 0; i < 9; ++i) step_with(s, false);  // steps 3-11 at the floor
  EXPECT_EQ(stops(s, 11), "") << "9 in a row at the floor";
  EXPECT_EQ(stops(s, 11), "") << "checking again changes nothing";
  step_with(s, false);  // step 12: the 10th
  const std::string why = stops(s, 12);
  EXPECT_NE(why.find("fp16: the last 10 steps (3 to 12) were all skipped"), std::string::npos) << why;
  EXPECT_NE(why.find("--train.amp bf16"), std::string::npos) << why;
  step_with(s, true);  // a finite step starts the count again
  for (int i = 0; i < 9; ++i) step_with(s, false);
  EXPECT_EQ(stops(s, 22), "");
  // --train.loss-scale 1: one overflow is a skipped step, not a stalled run.
  LossScaler one(true, torch::kCPU, 1.0, 2000);
  step_with(one, true);
  step_with(one, false);
  EXPECT_EQ(stops(one, 2), "");
  // A resume counts on: the streak is in checkpoints (s has 9 in a row at step 22). It
  // counted afresh before, so a stalled run resumed near its end finished as if it had trained.
  LossScaler resumed(true, torch::kCPU, 65536.0, 2000);
  resumed.load_state(s.state());
  EXPECT_DOUBLE_EQ(resumed.current_scale(), 1.0);
  EXPECT_EQ(stops(resumed, 22), "");
  step_with(resumed, false);
  EXPECT_NE(stops(resumed, 23).find("the last 10 steps (14 to 23)"), std::string::npos) << stops(resumed, 23);
  // A checkpoint written before the streak was saved: scale, growth and skips, no streak.
  LossScaler older(true, torch::kCPU, 65536.0, 2000);
  std::vector<double> three = s.state();
  three.pop_back();
  older.load_state(three);
  EXPECT_DOUBLE_EQ(older.current_scale(), 1.0);
  step_with(older, false);
  EXPECT_EQ(stops(older, 23), "") << "counts afresh";
  LossScaler off(false);
  EXPECT_EQ(stops(off, 10), "") << "bf16/none: nothing is skipped";
}

TEST(LossScaler, FusedSgdSkipsOnTheDeviceAsTheHostDecisionDoes) {
  for (const bool nesterov : {false, true}) {
    const OptimizerOptions o{OptimizerKind::kSgd, 0.05, 0.9, nesterov, 5e-4};
    torch::manual_seed(11);
    std::vector<torch::Tensor> a{torch::randn({8, 3, 3, 3}).contiguous(at::MemoryFormat::ChannelsLast), torch::randn({8})};
    std::vector<torch::Tensor> b{a[0].clone(), a[1].clone()};
    for (auto& t : a) t.set_requires_grad(true);
    for (auto& t : b) t.set_requires_grad(true);
    auto on_device = make_optimizer(a, o), on_host = make_optimizer(b, o);
    LossScaler sa(true, torch::kCPU, 256.0, 4), sb(true, torch::kCPU, 256.0, 4);
    const std::set<int> bad{0, 7, 8};  // a skipped first step: the momentum buffer's start
    for (int step = 0; step < 25; ++step) {
      torch::manual_seed(100 + static_cast<uint64_t>(step));
      for (size_t i = 0; i < a.size(); ++i) {
        torch::Tensor g = torch::randn(a[i].sizes());
        if (bad.count(step)) g.view(-1)[0] = INFINITY;
        a[i].mutable_grad() = (g * static_cast<float>(sa.current_scale())).contiguous(a[i].suggest_memory_format());
        b[i].mutable_grad() = (g * static_cast<float>(sb.current_scale())).contiguous(b[i].suggest_memory_format());
      }
      const torch::Tensor found = sa.unscale_and_update_async(a);
      fused_step(*on_device, o.kind, &found);
      if (sb.unscale_and_update(b)) on_host->step();
    }
    EXPECT_EQ(sa.skipped(), 3);
    EXPECT_EQ(sb.skipped(), 3);
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_LT((a[i] - b[i]).abs().max().item<double>(), 1e-6) << "parameter " << i << (nesterov ? " nesterov" : "");
      const auto& ma = static_cast<torch::optim::SGDParamState&>(*on_device->state().at(a[i].unsafeGetTensorImpl()));
      const auto& mb = static_cast<torch::optim::SGDParamState&>(*on_host->state().at(b[i].unsafeGetTensorImpl()));
      EXPECT_LT((ma.momentum_buffer() - mb.momentum_buffer()).abs().max().item<double>(), 1e-6) << "momentum " << i;
    }
  }
}

// Adam/AdamW take a found-inf flag only with their step count on the device (step_counter.hpp):
// with the host's, a skipped step would still be counted.
TEST(LossScaler, AFoundInfFlagNeedsAdamsCountOnTheDevice) {
  auto p = std::vector<torch::Tensor>{torch::zeros({2}).requires_grad_(true)};
  p[0].mutable_grad() = torch::ones({2});
  auto adam = make_optimizer(p, OptimizerOptions{OptimizerKind::kAdam, 1e-3, 0.9, false, 0.0});
  const torch::Tensor found = torch::zeros({});
  EXPECT_THROW(fused_step(*adam, OptimizerKind::kAdam, &found), std::exception);
}
