// optimizer: --train.optimizer (sgd with momentum / nesterov, adam, adamw), the learning
// rate each step, the learning-rate scaling rule by world size, and gradient clipping by
// global norm.
//
// Clipping runs after the all-reduce, on the averaged gradients, which are the same on
// every rank: every rank computes the same norm and the same scale, so parameters stay
// identical without another collective.
#pragma once

#include <torch/optim/optimizer.h>

#include <memory>
#include <string>
#include <vector>

#include "core/config/enums.hpp"

namespace lockstep {

struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::kSgd;
  double lr = 0.05;
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0.0;  // sgd/adam: L2 added to the gradient; adamw: decoupled
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::vector<torch::Tensor>& params,
                                                        const OptimizerOptions& opt);
void set_lr(torch::optim::Optimizer& opt, double lr);
// What make_optimizer built OPT as; throws Error for an optimizer it does not build.
OptimizerKind optimizer_kind(const torch::optim::Optimizer& opt);

// --train.lr-scaling: none (lr as given), linear (lr x world), sqrt (lr x sqrt(world)).
double scaled_lr(double lr, LrScaling rule, int world);

// Scales gradients so their global L2 norm is at most MAX_NORM (> 0). Returns the norm
// before clipping, as a device tensor (no host sync).
torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);
// clip_grad_norm, and whether this step counts as clipped: 1 (int64, on the device) when the
// norm was over MAX_NORM, 0 when it was not or when FOUND_INF (the fp16 loss scaler's; may
// be undefined) marks the step as skipped. For the clipped-step counters of the steps.
torch::Tensor clip_grad_norm_counted(const std::vector<torch::Tensor>& params, double max_norm,
                                     const torch::Tensor& found_inf);

}  // namespace lockstep
