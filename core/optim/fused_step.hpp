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
// FOUND_INF (SGD only; the fp16 loss scaler's, loss_scaler.hpp): the kernels skip the update
// on the device when it is set, so the step needs no host read. A momentum buffer created
// under it starts at zero and takes the first step's gradient through the kernel's ordinary
// update, which with dampening 0 (lockstep's SGD) is the same value torch::optim's first
// step copies; a skipped first step leaves it zero instead of uninitialised. Adam and AdamW
// keep their step count on the host (torch::optim's state), so they take the host decision.
// LR (SGD only): the learning rate as a float32 tensor on the parameters' device, read by the
// kernel on the device instead of the group's lr (a step captured in a CUDA graph reads the
// value of each replay; static_step.hpp). The group's lr must hold the same value.
void fused_step(torch::optim::Optimizer& opt, OptimizerKind kind, const torch::Tensor* found_inf = nullptr,
                const torch::Tensor* lr = nullptr);

}  // namespace lockstep
