// fused_step: one optimizer step through ATen's fused multi-tensor kernels
// (at::_fused_sgd_, _fused_adam_, _fused_adamw_: one kernel per parameter group and
// dtype instead of several per parameter; CPU and CUDA kernels alike).
//
// The optimizer stays the torch::optim object make_optimizer built: its param groups give
// the hyper-parameters (the lr set_lr wrote), and the per-parameter state (momentum
// buffers, exp_avg / exp_avg_sq, step) lives in its own state map, created exactly as its
// step() creates it. So checkpoints are torch::optim's, interchangeable both ways with
// runs that used torch::optim's step(), and the maths is the same within rounding (the
// kernels use lerp where torch::optim uses mul_+add_). Parameters without a gradient are
// skipped, as torch::optim does.
#pragma once

#include <torch/optim/optimizer.h>

#include "core/config/enums.hpp"

namespace lockstep {

// One step of OPT, which make_optimizer built for KIND. Throws Error for sparse gradients
// (none of lockstep's models has them).
void fused_step(torch::optim::Optimizer& opt, OptimizerKind kind);

}  // namespace lockstep
