// Issue 32 (the step on the device): fused optimizer steps (ATen's multi-tensor kernels)
// against torch::optim's own step(), over 50 steps, for every optimizer lockstep builds;
// their checkpoints interchangeable both ways; a state of another layout (a contiguous
// buffer for a channels-last parameter, as a checkpoint restores it) read correctly.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <sstream>
#include <vector>

#include "core/optim/fused_step.hpp"
#include "core/optim/optimizer.hpp"

using namespace lockstep;

namespace {

// Parameters of the shapes lockstep's models have: a channels-last conv weight, a bias,
// a linear weight; one more that never gets a gradient (a frozen one).
std::vector<torch::Tensor> make_params(uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> ps{torch::randn({8, 3, 3, 3}).contiguous(at::MemoryFormat::ChannelsLast),
                                torch::randn({8}), torch::randn({10, 32}), torch::randn({4})};
  for (auto& p : ps) p.set_requires_grad(true);
  return ps;
}

// Gradients of step STEP, the same for both runs.
void set_grads(std::vector<torch::Tensor>& ps, int step) {
  torch::manual_seed(1000 + static_cast<uint64_t>(step));
  for (size_t i = 0; i + 1 < ps.size(); ++i) {
    torch::Tensor g = torch::randn(ps[i].sizes()) * (1.0 + 0.1 * step);
    ps[i].mutable_grad() = g.contiguous(ps[i].suggest_memory_format());
  }
}

double max_rel_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double scale = std::max(1.0, a[i].abs().max().item<double>());
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>() / scale);
  }
  return worst;
}

std::string save(torch::optim::Optimizer& opt) {
  torch::serialize::OutputArchive ar;
  opt.save(ar);
  std::ostringstream out;
  ar.save_to(out);
  return out.str();
}

void load(torch::optim::Optimizer& opt, const std::string& bytes) {
  torch::serialize::InputArchive ar;
  std::istringstream in(bytes);
  ar.load_from(in);
  opt.load(ar);
}

const std::vector<std::pair<const char*, OptimizerOptions>>& cases() {
  static const std::vector<std::pair<const char*, OptimizerOptions>> all{
      {"sgd momentum", {OptimizerKind::kSgd, 0.05, 0.9, false, 0.0}},
      {"sgd nesterov + wd", {OptimizerKind::kSgd, 0.05, 0.9, true, 5e-4}},
      {"sgd plain + wd", {OptimizerKind::kSgd, 0.05, 0.0, false, 1e-3}},
      {"adam + wd", {OptimizerKind::kAdam, 1e-3, 0.9, false, 1e-4}},
      {"adamw + wd", {OptimizerKind::kAdamW, 1e-3, 0.9, false, 1e-2}}};
  return all;
}

}  // namespace

TEST(FusedStep, MatchesTorchOptimOver50Steps) {
  for (const auto& [name, o] : cases()) {
    auto a = make_params(7), b = make_params(7);
    auto ref = make_optimizer(a, o), fused = make_optimizer(b, o);
    for (int step = 0; step < 50; ++step) {
      if (step == 20) {  // a learning-rate change (the schedule) reaches both
        set_lr(*ref, o.lr * 0.5);
        set_lr(*fused, o.lr * 0.5);
      }
      set_grads(a, step);
      set_grads(b, step);
      ref->step();
      fused_step(*fused, o.kind);
    }
    EXPECT_LT(max_rel_diff(a, b), 1e-6) << name;
    EXPECT_TRUE(a[3].equal(b[3])) << name << ": a parameter without a gradient moved";
    EXPECT_TRUE(b[0].is_contiguous(at::MemoryFormat::ChannelsLast)) << name;
  }
}

TEST(FusedStep, CheckpointsAreInterchangeableBothWays) {
  for (const auto& [name, o] : cases()) {
    // Reference: 40 steps of torch::optim. Then 20 of one kind, a checkpoint, 20 of the other.
    auto r = make_params(3);
    auto ref = make_optimizer(r, o);
    for (int step = 0; step < 40; ++step) set_grads(r, step), ref->step();
    for (const bool fused_first : {true, false}) {
      auto p = make_params(3);
      auto first = make_optimizer(p, o);
      for (int step = 0; step < 20; ++step) {
        set_grads(p, step);
        fused_first ? fused_step(*first, o.kind) : static_cast<void>(first->step());
      }
      const std::string ckpt = save(*first);
      auto second = make_optimizer(p, o);
      load(*second, ckpt);
      for (int step = 20; step < 40; ++step) {
        set_grads(p, step);
        fused_first ? static_cast<void>(second->step()) : fused_step(*second, o.kind);
      }
      EXPECT_LT(max_rel_diff(r, p), 1e-6) << name << (fused_first ? ": fused, then torch::optim" : ": torch::optim, then fused");
    }
  }
}

TEST(FusedStep, AStateOfAnotherLayoutIsReadByIndexNotByMemoryOrder) {
  const OptimizerOptions o{OptimizerKind::kSgd, 0.05, 0.9, false, 0.0};
  auto a = make_params(5), b = make_params(5);
  auto ref = make_optimizer(a, o), fused = make_optimizer(b, o);
  set_grads(a, 0), set_grads(b, 0);
  ref->step();
  fused_step(*fused, o.kind);
  // The channels-last weight's momentum buffer, as a plain contiguous tensor.
  auto& s = static_cast<torch::optim::SGDParamState&>(*fused->state().at(b[0].unsafeGetTensorImpl()));
  s.momentum_buffer(s.momentum_buffer().contiguous());
  ASSERT_FALSE(s.momentum_buffer().is_contiguous(at::MemoryFormat::ChannelsLast));
  set_grads(a, 1), set_grads(b, 1);
  ref->step();
  fused_step(*fused, o.kind);
  EXPECT_LT(max_rel_diff(a, b), 1e-6);
}

// Adam/AdamW reading the lr and the step count from tensors (what a step captured in a CUDA
// graph reads each replay; static_step.hpp) == reading them from the host, bit for bit; with
// a device count the host counts are left to the caller. A lr change reaches both.
TEST(FusedStep, AdamWithADeviceLrAndStepCountEqualsTheHostValues) {
  for (const auto& [name, o] : cases()) {
    if (o.kind == OptimizerKind::kSgd) continue;
    auto a = make_params(9), b = make_params(9);
    auto host = make_optimizer(a, o), dev = make_optimizer(b, o);
    EXPECT_EQ(next_step_count(*dev, o.kind), 1) << name << ": before any state";
    const torch::Tensor lr = torch::zeros({}, torch::kDouble), count = torch::zeros({});
    for (int step = 0; step < 30; ++step) {
      const double now = step < 12 ? o.lr : o.lr * 0.3;
      set_lr(*host, now);
      set_lr(*dev, 1e3);  // poison: the kernels must read the tensor, not the group
      lr.fill_(now);
      count.fill_(static_cast<double>(step + 1));
      set_grads(a, step);
      set_grads(b, step);
      fused_step(*host, o.kind);
      fused_step(*dev, o.kind, nullptr, &lr, &count);
      EXPECT_EQ(next_step_count(*dev, o.kind), 1) << name << ": the host counts are the caller's";
      for (size_t i = 0; i < a.size(); ++i) ASSERT_TRUE(a[i].equal(b[i])) << name << " parameter " << i << " step " << step;
    }
    EXPECT_EQ(next_step_count(*host, o.kind), 31) << name;
    for (size_t i = 0; i + 1 < a.size(); ++i) {  // what a checkpoint holds besides the counts: the moments
      const auto& h = *host->state().at(a[i].unsafeGetTensorImpl());
      const auto& d = *dev->state().at(b[i].unsafeGetTensorImpl());
      const auto moments = [&](const torch::optim::OptimizerParamState& st) {
        if (o.kind == OptimizerKind::kAdam) {
          const auto& s = static_cast<const torch::optim::AdamParamState&>(st);
          return std::make_pair(s.exp_avg(), s.exp_avg_sq());
        }
        const auto& s = static_cast<const torch::optim::AdamWParamState&>(st);
        return std::make_pair(s.exp_avg(), s.exp_avg_sq());
      };
      EXPECT_TRUE(moments(h).first.equal(moments(d).first)) << name << " parameter " << i;
      EXPECT_TRUE(moments(h).second.equal(moments(d).second)) << name << " parameter " << i;
    }
    EXPECT_EQ(dev->state().count(b[3].unsafeGetTensorImpl()), 0u) << name << ": a parameter without a gradient";
  }
}

// The kernels read the count from the tensor: fresh states (host count 0) stepped with a
// count tensor holding 50 == states at step 49 stepped from their host count (bias correction
// at step 50, far from step 1's). A count of another dtype is refused (CUDA reads it as float).
TEST(FusedStep, AdamReadsTheStepCountFromTheTensor) {
  for (const OptimizerKind kind : {OptimizerKind::kAdam, OptimizerKind::kAdamW}) {
    const OptimizerOptions o{kind, 1e-2, 0.9, false, 1e-3};
    auto a = make_params(2), b = make_params(2), c = make_params(2);
    auto host = make_optimizer(a, o), dev = make_optimizer(b, o), plain = make_optimizer(c, o);
    for (size_t i = 0; i + 1 < a.size(); ++i) {  // host: states at step 49, moments zero
      std::unique_ptr<torch::optim::OptimizerParamState> st;
      if (kind == OptimizerKind::kAdam) {
        auto s = std::make_unique<torch::optim::AdamParamState>();
        s->step(49), s->exp_avg(torch::zeros_like(a[i])), s->exp_avg_sq(torch::zeros_like(a[i]));
        st = std::move(s);
      } else {
        auto s = std::make_unique<torch::optim::AdamWParamState>();
        s->step(49), s->exp_avg(torch::zeros_like(a[i])), s->exp_avg_sq(torch::zeros_like(a[i]));
        st = std::move(s);
      }
      host->state()[a[i].unsafeGetTensorImpl()] = std::move(st);
    }
    set_grads(a, 0), set_grads(b, 0), set_grads(c, 0);
    fused_step(*host, kind);
    const torch::Tensor fifty = torch::full({}, 50.0);
    fused_step(*dev, kind, nullptr, nullptr, &fifty);
    fused_step(*plain, kind);  // count 1
    for (size_t i = 0; i + 1 < a.size(); ++i) {
      EXPECT_TRUE(a[i].equal(b[i])) << to_string(kind) << " parameter " << i << ": the count was not the tensor's";
      EXPECT_FALSE(c[i].equal(b[i])) << to_string(kind) << " parameter " << i << ": counts 1 and 50 step alike";
    }
    const torch::Tensor wrong = torch::full({}, 2, torch::kLong);
    set_grads(b, 1);
    try {
      fused_step(*dev, kind, nullptr, nullptr, &wrong);
      FAIL() << "an int64 count was taken";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("0-dim float32 tensor"), std::string::npos) << e.what();
    }
  }
}

// One device count for every parameter: a parameter whose gradient came late or went missing
// would be stepped at the others' count, so it is refused, naming it and the remedy.
TEST(FusedStep, OneStepCountRefusesParametersAtDifferentSteps) {
  const OptimizerOptions o{OptimizerKind::kAdam, 1e-3, 0.9, false, 0.0};
  auto p = make_params(4);
  auto opt = make_optimizer(p, o);
  const auto refused = [&](const torch::Tensor& count, const std::string& what) {
    try {
      fused_step(*opt, o.kind, nullptr, nullptr, &count);
      ADD_FAILURE() << "the shared count was taken: " << what;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("rerun with --train.fused-optimizer false"), std::string::npos) << e.what();
    }
  };
  set_grads(p, 0);
  p[2].mutable_grad() = torch::Tensor();  // the linear weight sits this step out
  fused_step(*opt, o.kind);
  set_grads(p, 1);  // now it steps, for the first time, where the others are at 1
  const torch::Tensor count = torch::full({}, 2.0);
  refused(count, "parameter 2 takes its first step after the others'");
  fused_step(*opt, o.kind);  // per-parameter counts made here: fine
  try {
    next_step_count(*opt, o.kind);
    FAIL() << "states at steps 2 and 1 gave one next count";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("parameter 2 is at Adam step 1, the others at 2"), std::string::npos) << e.what();
  }
  set_grads(p, 2);
  p[1].mutable_grad() = torch::Tensor();
  refused(count, "parameter 1 has no gradient in this step while the others step");
  const torch::Tensor none = torch::zeros({});
  auto sgd = make_optimizer(p, {OptimizerKind::kSgd, 0.05, 0.9, false, 0.0});
  EXPECT_EQ(next_step_count(*sgd, OptimizerKind::kSgd), 0);
  EXPECT_THROW(fused_step(*sgd, OptimizerKind::kSgd, nullptr, nullptr, &none), std::exception);
}

// A found-inf flag that is set skips Adam's and AdamW's update on the device: parameters and
// moments untouched (the states made, at step 0); clear, the step runs as without it. Without a
// device count it is refused: the host counts would count the skipped step.
TEST(FusedStep, AdamSkipsAStepOnTheDeviceWhereFoundInfIsSet) {
  for (const OptimizerKind kind : {OptimizerKind::kAdam, OptimizerKind::kAdamW}) {
    const OptimizerOptions o{kind, 1e-2, 0.9, false, 1e-3};
    auto a = make_params(3), b = make_params(3), before = make_params(3);
    auto ref = make_optimizer(a, o), dev = make_optimizer(b, o);
    const torch::Tensor set = torch::ones({}), clear = torch::zeros({}), count = torch::ones({});
    set_grads(b, 0);
    fused_step(*dev, kind, &set, nullptr, &count);
    for (size_t i = 0; i < b.size(); ++i) EXPECT_TRUE(b[i].equal(before[i])) << to_string(kind) << " parameter " << i;
    for (size_t i = 0; i + 1 < b.size(); ++i) {
      const auto& st = *dev->state().at(b[i].unsafeGetTensorImpl());
      const torch::Tensor avg = kind == OptimizerKind::kAdam
                                    ? static_cast<const torch::optim::AdamParamState&>(st).exp_avg()
                                    : static_cast<const torch::optim::AdamWParamState&>(st).exp_avg();
      EXPECT_EQ(avg.count_nonzero().item<int64_t>(), 0) << to_string(kind) << " parameter " << i;
    }
    EXPECT_EQ(next_step_count(*dev, kind), 1);
    set_grads(a, 1), set_grads(b, 1);
    fused_step(*ref, kind);  // count 1, from the host
    fused_step(*dev, kind, &clear, nullptr, &count);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].equal(b[i])) << to_string(kind) << " parameter " << i;
    EXPECT_THROW(fused_step(*dev, kind, &clear), std::exception);
  }
}
