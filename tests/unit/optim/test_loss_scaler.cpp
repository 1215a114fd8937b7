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
  restored.load_state(dev.state(), 50);
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
// 0, a checkpoint). check_progress stops it once a whole stretch between checks was skipped at
// the floor; overflows above the floor, or one finite step in the stretch, are training.
TEST(LossScaler, EveryStepSkippedAtTheFloorStopsTheRun) {
  auto p = torch::zeros({4}).requires_grad_(true);
  const auto step_with = [&p](LossScaler& s, bool finite) {
    p.mutable_grad() = finite ? torch::ones({4}) : torch::full({4}, INFINITY);
    s.unscale_and_update_async({p});
  };
  LossScaler s(true, torch::kCPU, 8.0, 2000);
  step_with(s, false);  // 8 -> 4
  step_with(s, false);  // -> 2
  EXPECT_NO_THROW(s.check_progress(2)) << "skipped, but above the floor when checked";
  step_with(s, false);  // -> 1
  step_with(s, false);  // stays 1
  EXPECT_DOUBLE_EQ(s.current_scale(), 1.0);
  try {
    s.check_progress(4);
    FAIL() << "steps 3-4 were skipped at the floor";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("fp16: steps 3 to 4 were all skipped"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--train.amp bf16"), std::string::npos) << e.what();
  }
  // One finite step in the stretch: it trained.
  step_with(s, false);
  step_with(s, true);
  step_with(s, false);
  EXPECT_NO_THROW(s.check_progress(7));
  EXPECT_NO_THROW(s.check_progress(7)) << "no step since the last check";
  // Resumed at step 100 from a checkpoint at the floor: the stretch starts there.
  LossScaler resumed(true, torch::kCPU, 65536.0, 2000);
  resumed.load_state(s.state(), 100);
  step_with(resumed, false);
  EXPECT_THROW(resumed.check_progress(101), std::exception);
  // A checkpoint without fp16's state (a bf16 run resumed under fp16) starts afresh at its step.
  LossScaler fresh(true, torch::kCPU, 1.0, 2000);
  fresh.load_state({}, 40);
  step_with(fresh, true);
  step_with(fresh, false);
  EXPECT_NO_THROW(fresh.check_progress(42));
  step_with(fresh, false);
  EXPECT_THROW(fresh.check_progress(43), std::exception);
  LossScaler off(false);
  EXPECT_NO_THROW(off.check_progress(10)) << "bf16/none: nothing is skipped";
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
