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
