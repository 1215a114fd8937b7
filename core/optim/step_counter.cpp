// step_counter: see step_counter.hpp.
#include "core/optim/step_counter.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <string>

#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/optim/fused_step.hpp"
#include "core/optim/optimizer.hpp"

namespace lockstep {
namespace {

constexpr int64_t kExactSteps = int64_t{1} << 24;  // float32's last integer with no gap below it

}  // namespace

StepCounter::StepCounter(torch::optim::Optimizer& opt) : opt_(opt), kind_(optimizer_kind(opt)) {}

const torch::Tensor& StepCounter::begin() {
  LOCKSTEP_REQUIRE(kind_ != OptimizerKind::kSgd, "step counter: SGD counts no steps");
  torch::NoGradGuard no_grad;
  if (!count_.defined()) {
    const torch::Tensor& first = opt_.param_groups().at(0).params().at(0);
    const int64_t taken = next_step_count(opt_, kind_) - 1;
    count_ = torch::full({}, static_cast<double>(std::min(taken, kExactSteps)),
                         torch::TensorOptions().dtype(torch::kFloat).device(first.device()));
  }
  count_.add_(1);
  return count_;
}

void StepCounter::end(const torch::Tensor& found_inf) {
  LOCKSTEP_REQUIRE(count_.defined(), "step counter: end() without begin()");
  torch::NoGradGuard no_grad;
  count_.sub_(found_inf);
}

void StepCounter::step(const torch::Tensor* found_inf, const torch::Tensor* lr) {
  fused_step(opt_, kind_, found_inf, lr, &begin());
  if (found_inf) end(*found_inf);
}

void StepCounter::settle() {
  if (!count_.defined()) return;
  const auto taken = static_cast<int64_t>(count_.item<float>());  // the host sync, at checkpoints only
  if (taken >= kExactSteps - 1 && !warned_) {
    warned_ = true;
    log::warn0(std::string("the fused ") + to_string(kind_) + " step count on the device reached " + std::to_string(taken) +
               ", the end of float32's exact integers (2^24 = 16777216): checkpoints hold it from here on, an "
               "approximate count (the updates are unaffected: bias correction has been exactly 1 for millions of "
               "steps)");
  }
  set_step_count(opt_, kind_, taken);
}

void StepCounter::restart() {
  LOCKSTEP_REQUIRE(!count_.defined(), "step counter: the optimizer's state was replaced after the steps began");
}

}  // namespace lockstep
