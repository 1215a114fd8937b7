// The step over fixed buffers (static_step.hpp), on the CPU at every world size: equal bit for
// bit to the eager step StepRunner takes (the lr as a double there, a tensor here) over many
// steps — dropout, weight decay, clipping and momentum included — while its input, label, lr
// and momentum tensors keep their addresses from the first step on (what a CUDA graph's
// replay needs), and at several ranks every gradient is its bucket slot, at a fixed address
// too (what a replayed all-reduce needs; at one rank the gradients' addresses are the graph's
// own, a GPU test).
#include <gtest/gtest.h>

#include <cmath>
#include <utility>

#include <torch/torch.h>

#include "core/data/batch_maker.hpp"
#include "core/dist/grad_reducer.hpp"
#include "core/dist/mpi_communicator.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/model/registry.hpp"
#include "core/optim/amp.hpp"
#include "core/optim/fused_step.hpp"
#include "core/optim/loss.hpp"
#include "core/optim/loss_scaler.hpp"
#include "core/optim/optimizer.hpp"
#include "core/train/objective.hpp"
#include "core/train/static_step.hpp"
#include "image_spec.hpp"
#include "mpi_test_env.hpp"
#include "step_parts.hpp"

using namespace lockstep;
using lockstep::testing::mpi;

namespace {

constexpr double kClip = 0.3;

using lockstep::testing::StepParts;

lockstep::testing::StepOptions options(Amp amp) {
  lockstep::testing::StepOptions o;
  o.amp = amp;
  o.dropout = 0.25;
  o.label_smoothing = 0.1;
  o.lr = 0.1;
  o.weight_decay = 1e-3;
  o.bucket_mb = 0.01;
  o.clip_norm = kClip;
  return o;
}

// The eager step, one micro-batch, as StepRunner took it before Adam's count moved to the
// device (step_runner.cpp): the reference.
StepOutput eager_step(StepParts& r, Amp amp, const torch::Tensor& x, const torch::Tensor& y, double lr, int64_t* clipped) {
  set_lr(*r.opt, lr);
  r.opt->zero_grad();
  Scored s;
  {
    AutocastGuard autocast(amp, torch::kCPU);
    s = r.objective.classes(*r.model, x, y);
  }
  r.reducer->prepare(true);
  r.scaler.scale(s.loss).backward();
  r.reducer->finish();
  // SGD skips an fp16 overflow on the device; Adam/AdamW step only where the host read
  // found-inf clear, their counts made from the host's (what the fixed-buffer step's device
  // count is checked against here; StepRunner's eager fp16 Adam step is checked against
  // torch::optim's in e2e trainer_features).
  const OptimizerKind kind = optimizer_kind(*r.opt);
  torch::Tensor found_inf;
  if (kind == OptimizerKind::kSgd)
    found_inf = r.scaler.unscale_and_update_async(r.params);
  else if (!r.scaler.unscale_and_update(r.params))
    return {s.loss.detach(), s.correct};
  *clipped += clip_grad_norm(r.params, kClip).item<double>() > kClip ? 1 : 0;
  fused_step(*r.opt, kind, found_inf.defined() ? &found_inf : nullptr);
  return {s.loss.detach(), s.correct};
}

// One step of one batch through the eager reference (EAGER) and the fixed-buffer STEP over
// FIXED's parts, at LR: the batch drawn from DATA_SEED (each rank its own), the dropout draws
// from DROP_SEED, alike in both. Returns (eager, fixed) outputs.
std::pair<StepOutput, StepOutput> step_both(StepParts& eager, StepParts& fixed, StaticStep& step, Amp amp,
                                            uint64_t data_seed, uint64_t drop_seed, double lr, int64_t* clipped) {
  torch::manual_seed(data_seed + 1000 * static_cast<uint64_t>(mpi().rank()));
  const torch::Tensor x = torch::randn({16, 1, 12, 12}), y = torch::randint(0, 5, {16});
  torch::manual_seed(drop_seed);
  StepOutput a = eager_step(eager, amp, x, y, lr, clipped);
  torch::manual_seed(drop_seed);
  set_lr(*fixed.opt, lr);
  StepOutput b = step.run(x, y, lr, nullptr);
  return {a, b};
}

}  // namespace

TEST(StaticStep, EqualsTheEagerStepBitForBitWithFixedAddresses) {
  for (Amp amp : {Amp::kNone, Amp::kBf16}) {
    StepParts eager(options(amp)), fixed(options(amp));
    StaticStep step(fixed.parts(), /*capture=*/false);
    std::vector<const void*> addresses;
    int64_t clipped = 0;
    for (int i = 0; i < 25; ++i) {
      const auto [a, b] = step_both(eager, fixed, step, amp, 100 + i, 7 + i, 0.1 * (1.0 - 0.03 * i), &clipped);
      ASSERT_TRUE(torch::equal(a.loss, b.loss)) << "step " << i << " " << to_string(amp);
      ASSERT_TRUE(torch::equal(a.correct, b.correct)) << "step " << i;
      for (size_t k = 0; k < eager.params.size(); ++k)
        ASSERT_TRUE(torch::equal(eager.params[k], fixed.params[k])) << "parameter " << k << " at step " << i;
      std::vector<const void*> now;
      for (const auto& t : step.buffers()) now.push_back(t.data_ptr());
      for (const auto& [key, state] : fixed.opt->state())
        now.push_back(static_cast<torch::optim::SGDParamState&>(*state).momentum_buffer().data_ptr());
      if (!fixed.reducer->passes_through())
        for (size_t k = 0; k < fixed.params.size(); ++k) {
          ASSERT_TRUE(fixed.params[k].grad().is_same(fixed.reducer->slot(k))) << "parameter " << k << " at step " << i;
          now.push_back(fixed.params[k].grad().data_ptr());
        }
      if (i == 1) addresses = now;  // after the first step every buffer exists
      if (i > 1) ASSERT_EQ(now, addresses) << "a buffer moved at step " << i;
    }
    EXPECT_GT(clipped, 0);
    EXPECT_EQ(step.clipped_steps(), clipped) << "the clip count is kept in place";
  }
}

// The fed bytes (uint8, the stored dtype) go into the fixed input buffer and are normalised
// inside the step (StepRunner without augmentation): the same as the eager step on the batch
// BatchMaker::inputs() gives, bit for bit, in either layout of the normalised batch.
TEST(StaticStep, NormalisesTheFedBytesInsideTheStepAsTheEagerStepDoes) {
  const io::DatasetSpec spec = lockstep::testing::image_spec("gray", 12, 5, 120.0, 64.0);
  for (bool channels_last : {false, true}) {
    const BatchMaker maker(spec, torch::kCPU, /*stage=*/false, channels_last);
    StepParts eager(options(Amp::kNone)), fixed(options(Amp::kNone));
    StaticStepParts parts = fixed.parts();
    parts.prepare = [&maker](const torch::Tensor& raw) { return maker.normalise(raw); };
    StaticStep step(parts, /*capture=*/false);
    int64_t clipped = 0;
    for (int i = 0; i < 10; ++i) {
      torch::manual_seed(300 + i + 1000 * mpi().rank());
      const torch::Tensor raw = torch::randint(0, 256, {16, 1, 12, 12}, torch::kUInt8), y = torch::randint(0, 5, {16});
      const double lr = 0.1 * (1.0 - 0.05 * i);
      torch::manual_seed(9 + i);
      const StepOutput a = eager_step(eager, Amp::kNone, maker.inputs(raw.data_ptr(), 16), y, lr, &clipped);
      torch::manual_seed(9 + i);
      set_lr(*fixed.opt, lr);
      const StepOutput b = step.run(raw, y, lr, nullptr);
      ASSERT_TRUE(torch::equal(a.loss, b.loss)) << "step " << i << (channels_last ? " channels-last" : "");
      for (size_t k = 0; k < eager.params.size(); ++k)
        ASSERT_TRUE(torch::equal(eager.params[k], fixed.params[k])) << "parameter " << k << " at step " << i;
    }
    EXPECT_EQ(step.buffers()[0].scalar_type(), torch::kUInt8) << "the fixed input buffer holds the fed bytes";
  }
}

// Adam and AdamW over fixed buffers: the lr is a device tensor written before each step and the
// step count the StepCounter's, advanced inside the step (what a replay reads), the moments
// are updated in place. Equal bit for bit to the eager step with the host's lr and counts,
// the same host step counts once settled (what a checkpoint saves), their buffers at fixed
// addresses from the first step.
TEST(StaticStep, AdamAndAdamWEqualTheEagerStepBitForBit) {
  for (const auto& [kind, amp] : {std::pair{OptimizerKind::kAdam, Amp::kNone}, std::pair{OptimizerKind::kAdamW, Amp::kBf16}}) {
    lockstep::testing::StepOptions o = options(amp);
    o.optimizer = kind;
    o.lr = 2e-3;
    StepParts eager(o), fixed(o);
    StaticStep step(fixed.parts(), /*capture=*/false);
    std::vector<const void*> addresses;
    int64_t clipped = 0;
    for (int i = 0; i < 20; ++i) {
      const auto [a, b] = step_both(eager, fixed, step, amp, 200 + i, 17 + i, 2e-3 * (1.0 - 0.04 * i), &clipped);
      ASSERT_TRUE(torch::equal(a.loss, b.loss)) << to_string(kind) << " step " << i;
      for (size_t k = 0; k < eager.params.size(); ++k)
        ASSERT_TRUE(torch::equal(eager.params[k], fixed.params[k])) << to_string(kind) << " parameter " << k << " step " << i;
      if (i % 2 == 0) {
        EXPECT_EQ(next_step_count(*fixed.opt, kind), std::max(i, 1)) << "the host counts wait for settle()";
        fixed.counter->settle();
      }
      EXPECT_EQ(next_step_count(*fixed.opt, kind), i % 2 == 0 ? i + 2 : i + 1) << "settled at even steps";
      EXPECT_EQ(next_step_count(*eager.opt, kind), i + 2);
      std::vector<const void*> now;
      for (const auto& t : step.buffers()) now.push_back(t.data_ptr());
      for (const auto& p : fixed.params) {
        const auto& st = *fixed.opt->state().at(p.unsafeGetTensorImpl());
        if (kind == OptimizerKind::kAdam) {
          now.push_back(static_cast<const torch::optim::AdamParamState&>(st).exp_avg().data_ptr());
          now.push_back(static_cast<const torch::optim::AdamParamState&>(st).exp_avg_sq().data_ptr());
        } else {
          now.push_back(static_cast<const torch::optim::AdamWParamState&>(st).exp_avg().data_ptr());
          now.push_back(static_cast<const torch::optim::AdamWParamState&>(st).exp_avg_sq().data_ptr());
        }
      }
      if (i == 1) addresses = now;
      if (i > 1) ASSERT_EQ(now, addresses) << "a buffer moved at step " << i;
    }
    EXPECT_GT(clipped, 0);
    EXPECT_EQ(step.clipped_steps(), clipped);
  }
}

// fp16 with Adam/AdamW: the loss scaler's found-inf stays on the device, the fused kernels skip
// an overflowing step there and the StepCounter takes its count back, so no host read decides
// the step (what lets it be captured). A loss scale of 2^24 with growth every 2 steps makes
// gradients overflow at the first step and again whenever the scale grows back. Equal bit for
// bit to the eager step that reads found-inf on the host and steps only where it is clear
// (the step before this change), with the same host step counts once settled: the skipped
// steps do not count.
TEST(StaticStep, Fp16AdamSkipsOverflowingStepsOnTheDeviceAsTheHostDecisionDoes) {
  for (const OptimizerKind kind : {OptimizerKind::kAdam, OptimizerKind::kAdamW}) {
    lockstep::testing::StepOptions o = options(Amp::kFp16);
    o.optimizer = kind;
    o.lr = 2e-3;
    StepParts eager(o), fixed(o);
    eager.scaler = LossScaler(true, torch::kCPU, std::ldexp(1.0, 24), 2);
    fixed.scaler = LossScaler(true, torch::kCPU, std::ldexp(1.0, 24), 2);
    StaticStep step(fixed.parts(), /*capture=*/false);
    int64_t clipped = 0;
    for (int i = 0; i < 20; ++i) {
      const auto [a, b] = step_both(eager, fixed, step, Amp::kFp16, 400 + i, 27 + i, 2e-3 * (1.0 - 0.04 * i), &clipped);
      ASSERT_TRUE(torch::equal(a.loss, b.loss)) << to_string(kind) << " step " << i;
      for (size_t k = 0; k < eager.params.size(); ++k)
        ASSERT_TRUE(torch::equal(eager.params[k], fixed.params[k])) << to_string(kind) << " parameter " << k << " step " << i;
      ASSERT_EQ(fixed.scaler.skipped(), eager.scaler.skipped()) << "step " << i;
      if (i == 0) ASSERT_EQ(fixed.scaler.skipped(), 1) << "the first step overflows (its states are made, uncounted)";
    }
    const int64_t skipped = fixed.scaler.skipped();
    EXPECT_GT(skipped, 2) << "the scale grew back into overflow";
    EXPECT_LT(skipped, 16) << "steps ran between the skips";
    fixed.counter->settle();
    EXPECT_EQ(next_step_count(*fixed.opt, kind), 20 - skipped + 1) << "skipped steps do not count";
    EXPECT_EQ(next_step_count(*eager.opt, kind), 20 - skipped + 1);
    EXPECT_EQ(fixed.scaler.current_scale(), eager.scaler.current_scale());
  }
}

TEST(StaticStep, SaysWhereAGraphCannotHoldTheStep) {
  StaticStepCase c;
  EXPECT_EQ(static_step_obstacle(c), "it needs a CUDA GPU");
  c.cuda = true;
  EXPECT_EQ(static_step_obstacle(c), "");
  c.world = 2;  // several ranks: captured only when asked for
  EXPECT_NE(static_step_obstacle(c).find("--train.cuda-graph on"), std::string::npos);
  c.mode = CudaGraph::kOn;
  EXPECT_EQ(static_step_obstacle(c), "");
  c.world = 1;
  c.mode = CudaGraph::kAuto;
  c.optimizer = OptimizerKind::kAdam;  // its lr and step count on the device: captured when asked for
  EXPECT_NE(static_step_obstacle(c).find("--train.cuda-graph on captures it"), std::string::npos);
  c.fused_optimizer = false;  // a hard obstacle names itself, not what `on` would capture
  EXPECT_NE(static_step_obstacle(c).find("--train.fused-optimizer false"), std::string::npos) << static_step_obstacle(c);
  c.fused_optimizer = true;
  c.mode = CudaGraph::kOn;
  EXPECT_EQ(static_step_obstacle(c), "");
  c.amp = Amp::kFp16;  // the loss scaler's skip and Adam's count stay on the device
  EXPECT_EQ(static_step_obstacle(c), "");
  c.optimizer = OptimizerKind::kSgd;
  EXPECT_EQ(static_step_obstacle(c), "");
  c.amp = Amp::kNone;
  c.ragged = true;
  EXPECT_NE(static_step_obstacle(c).find("ragged"), std::string::npos);
  c.ragged = false;
  c.grad_accum = 2;
  EXPECT_NE(static_step_obstacle(c).find("grad-accum"), std::string::npos);
}
