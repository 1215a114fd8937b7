// Issue 32 (the step on the device): Adam's and AdamW's step count kept on the device
// (core/optim/step_counter) against the host's counts, with skipped steps (the fp16 loss
// scaler's found-inf) among them; settle() writing the host counts a checkpoint saves;
// restart() after a load; SGD refused; float32's last exact count.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "core/optim/fused_step.hpp"
#include "core/optim/optimizer.hpp"
#include "core/optim/step_counter.hpp"

using namespace lockstep;

namespace {

std::vector<torch::Tensor> counted_params(uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> ps{torch::randn({6, 3, 3, 3}).contiguous(at::MemoryFormat::ChannelsLast),
                                torch::randn({6}), torch::randn({10, 12})};
  for (auto& p : ps) p.set_requires_grad(true);
  return ps;
}

void set_counted_grads(std::vector<torch::Tensor>& ps, int step) {
  torch::manual_seed(2000 + static_cast<uint64_t>(step));
  for (auto& p : ps) p.mutable_grad() = torch::randn(p.sizes()).contiguous(p.suggest_memory_format());
}

// Every state's step (Adam or AdamW).
std::vector<int64_t> host_steps(const torch::optim::Optimizer& opt, OptimizerKind kind) {
  std::vector<int64_t> out;
  for (const auto& [key, st] : opt.state())
    out.push_back(kind == OptimizerKind::kAdam ? static_cast<const torch::optim::AdamParamState&>(*st).step()
                                               : static_cast<const torch::optim::AdamWParamState&>(*st).step());
  return out;
}

}  // namespace

// 40 steps, some skipped (the first among them): the device count with the kernels skipping on
// found-inf == the host stepping only where found-inf is clear, bit for bit; the host counts
// lag until settle(), which makes them the steps taken.
TEST(StepCounter, SkippedStepsDoNotCountAsOnTheHost) {
  const std::set<int> skipped{0, 4, 5, 17, 30};
  for (const OptimizerKind kind : {OptimizerKind::kAdam, OptimizerKind::kAdamW}) {
    const OptimizerOptions o{kind, 3e-3, 0.9, false, 1e-2};
    auto a = counted_params(1), b = counted_params(1);
    auto host = make_optimizer(a, o), dev = make_optimizer(b, o);
    StepCounter counter(*dev);
    EXPECT_FALSE(counter.started());
    const torch::Tensor found_inf = torch::zeros({});
    int taken = 0;
    for (int step = 0; step < 40; ++step) {
      const bool skip = skipped.count(step) > 0;
      set_counted_grads(a, step), set_counted_grads(b, step);
      if (!skip) fused_step(*host, kind), ++taken;
      found_inf.fill_(skip ? 1.0 : 0.0);
      counter.step(&found_inf, nullptr);
      for (size_t i = 0; i < a.size(); ++i) ASSERT_TRUE(a[i].equal(b[i])) << to_string(kind) << " step " << step;
    }
    EXPECT_EQ(host_steps(*dev, kind), std::vector<int64_t>(3, 0)) << "the host counts wait for settle()";
    counter.settle();
    EXPECT_EQ(host_steps(*dev, kind), std::vector<int64_t>(3, taken));
    EXPECT_EQ(host_steps(*host, kind), std::vector<int64_t>(3, taken));
    for (size_t i = 0; i < a.size(); ++i) {  // what a checkpoint holds: the same moments
      const auto& h = *host->state().at(a[i].unsafeGetTensorImpl());
      const auto& d = *dev->state().at(b[i].unsafeGetTensorImpl());
      const auto moments = [kind](const torch::optim::OptimizerParamState& st) {
        if (kind == OptimizerKind::kAdam) {
          const auto& s = static_cast<const torch::optim::AdamParamState&>(st);
          return std::make_pair(s.exp_avg(), s.exp_avg_sq());
        }
        const auto& s = static_cast<const torch::optim::AdamWParamState&>(st);
        return std::make_pair(s.exp_avg(), s.exp_avg_sq());
      };
      EXPECT_TRUE(moments(h).first.equal(moments(d).first)) << to_string(kind) << " parameter " << i;
      EXPECT_TRUE(moments(h).second.equal(moments(d).second)) << to_string(kind) << " parameter " << i;
    }
  }
}

// A resume replaces the host states before the first step: the count starts from them, and the
// steps continue as the host's would, skips included. Once steps ran on the count, a load is
// refused (a graph may hold its address, and the moments' the load replaced).
TEST(StepCounter, StartsFromLoadedStates) {
  const OptimizerOptions o{OptimizerKind::kAdam, 3e-3, 0.9, false, 0.0};
  auto a = counted_params(2), b = counted_params(2);
  auto host = make_optimizer(a, o), dev = make_optimizer(b, o);
  StepCounter counter(*dev);
  for (int step = 0; step < 10; ++step) set_counted_grads(a, step), fused_step(*host, o.kind);
  std::stringstream archive;  // the host run's checkpoint at step 10, loaded into dev
  {
    torch::serialize::OutputArchive out;
    host->save(out);
    out.save_to(archive);
  }
  torch::serialize::InputArchive in;
  in.load_from(archive);
  dev->load(in);
  for (size_t i = 0; i < a.size(); ++i) b[i].detach().copy_(a[i].detach());
  counter.restart();
  const torch::Tensor found_inf = torch::zeros({});
  int taken = 10;
  for (int step = 10; step < 16; ++step) {
    const bool skip = step == 10 || step == 13;
    set_counted_grads(a, step), set_counted_grads(b, step);
    if (!skip) fused_step(*host, o.kind), ++taken;
    const torch::Tensor& count = counter.begin();
    EXPECT_EQ(count.item<float>(), static_cast<float>(taken + (skip ? 1 : 0))) << "step " << step;
    found_inf.fill_(skip ? 1.0 : 0.0);
    fused_step(*dev, o.kind, &found_inf, nullptr, &count);
    counter.end(found_inf);
    for (size_t i = 0; i < a.size(); ++i) ASSERT_TRUE(a[i].equal(b[i])) << "step " << step;
  }
  counter.settle();
  EXPECT_EQ(host_steps(*dev, o.kind), std::vector<int64_t>(3, taken));
  EXPECT_EQ(taken, 14);
  EXPECT_THROW(counter.restart(), std::exception);
}

TEST(StepCounter, SettleBeforeAnyStepLeavesTheHostStatesAndSgdCountsNothing) {
  const OptimizerOptions o{OptimizerKind::kAdamW, 3e-3, 0.9, false, 0.0};
  auto p = counted_params(3);
  auto opt = make_optimizer(p, o);
  set_counted_grads(p, 0);
  fused_step(*opt, o.kind);  // host counts: 1
  StepCounter counter(*opt);
  counter.settle();  // not started: the host states are the truth
  EXPECT_EQ(host_steps(*opt, o.kind), std::vector<int64_t>(3, 1));
  EXPECT_EQ(counter.begin().item<float>(), 2.0f) << "started from the host states";
  auto sgd = make_optimizer(p, {OptimizerKind::kSgd, 0.05, 0.9, false, 0.0});
  StepCounter none(*sgd);
  EXPECT_THROW(none.begin(), std::exception);
  none.settle();  // nothing to do
}

// float32 holds every count up to 2^24: a count there is saved as is; past it the count stops
// growing (x + 1 == x) and settle() saves 2^24 (the updates are unaffected: bias correction is
// exactly 1 by then).
TEST(StepCounter, CountsExactlyUpToTwoToThe24) {
  const OptimizerOptions o{OptimizerKind::kAdam, 3e-3, 0.9, false, 0.0};
  auto p = counted_params(4);
  auto opt = make_optimizer(p, o);
  set_counted_grads(p, 0);
  fused_step(*opt, o.kind);
  const int64_t last = int64_t{1} << 24;
  set_step_count(*opt, o.kind, last - 2);
  StepCounter counter(*opt);
  for (int i = 0; i < 2; ++i) fused_step(*opt, o.kind, nullptr, nullptr, &counter.begin());
  counter.settle();
  EXPECT_EQ(host_steps(*opt, o.kind), std::vector<int64_t>(3, last));
  fused_step(*opt, o.kind, nullptr, nullptr, &counter.begin());
  counter.settle();
  EXPECT_EQ(host_steps(*opt, o.kind), std::vector<int64_t>(3, last)) << "saturated";
}
