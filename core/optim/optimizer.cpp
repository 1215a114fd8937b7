// optimizer: see optimizer.hpp.
#include "core/optim/optimizer.hpp"

#include <torch/torch.h>

#include <cmath>

#include "core/base/error.hpp"

namespace lockstep {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::vector<torch::Tensor>& params,
                                                        const OptimizerOptions& o) {
  namespace optim = torch::optim;
  switch (o.kind) {
    case OptimizerKind::kSgd:
      if (o.nesterov && o.momentum <= 0) throw UsageError("--train.nesterov needs --train.momentum > 0");
      return std::make_unique<optim::SGD>(
          params, optim::SGDOptions(o.lr).momentum(o.momentum).nesterov(o.nesterov).weight_decay(o.weight_decay));
    case OptimizerKind::kAdam:
      return std::make_unique<optim::Adam>(
          params, optim::AdamOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay));
    case OptimizerKind::kAdamW:
      return std::make_unique<optim::AdamW>(
          params, optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay));
  }
  throw Error("unknown optimizer kind");
}

OptimizerKind optimizer_kind(const torch::optim::Optimizer& opt) {
  if (dynamic_cast<const torch::optim::SGD*>(&opt)) return OptimizerKind::kSgd;
  if (dynamic_cast<const torch::optim::Adam*>(&opt)) return OptimizerKind::kAdam;
  if (dynamic_cast<const torch::optim::AdamW*>(&opt)) return OptimizerKind::kAdamW;
  throw Error("an optimizer lockstep does not build (sgd, adam, adamw)");
}

void set_lr(torch::optim::Optimizer& opt, double lr) {
  for (auto& group : opt.param_groups()) group.options().set_lr(lr);
}

double scaled_lr(double lr, LrScaling rule, int world) {
  switch (rule) {
    case LrScaling::kLinear: return lr * world;
    case LrScaling::kSqrt: return lr * std::sqrt(static_cast<double>(world));
    case LrScaling::kNone: break;
  }
  return lr;
}

torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  // No gradient (every parameter frozen or unused this step): a norm of 0 on the parameters'
  // device, as the norm below would be (a CPU scalar mixed into the CUDA step's counters).
  if (grads.empty())
    return torch::zeros({}, params.empty() ? torch::TensorOptions() : params[0].options().dtype(torch::kFloat));
  // Multi-tensor kernels (a few launches for all gradients, as torch.nn.utils.clip_grad_norm_
  // with foreach): the per-tensor norms in float32, their norm, one scaling.
  const torch::Tensor total = torch::stack(at::_foreach_norm(grads, 2, torch::kFloat)).norm();
  // min(1, max/total) without a branch on the host.
  const torch::Tensor coef = (max_norm / (total + 1e-6)).clamp_max(1.0);
  at::_foreach_mul_(grads, coef);
  return total;
}

torch::Tensor clip_grad_norm_counted(const std::vector<torch::Tensor>& params, double max_norm,
                                     const torch::Tensor& found_inf) {
  torch::Tensor over = (clip_grad_norm(params, max_norm) > max_norm).to(torch::kLong);
  if (found_inf.defined()) over = over * found_inf.eq(0).to(torch::kLong);  // a skipped step is not clipped
  return over;
}

}  // namespace lockstep
