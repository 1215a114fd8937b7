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
// FOUND_INF (the fp16 loss scaler's, loss_scaler.hpp): the kernels skip the update on the
// device when it is set, so the step needs no host read. A momentum buffer created under it
// starts at zero and takes the first step's gradient through the kernel's ordinary update,
// which with dampening 0 (lockstep's SGD) is the same value torch::optim's first step copies;
// a skipped first step leaves it zero instead of uninitialised (Adam's moments start at zero
// anyway). Adam/AdamW take it only with COUNT: a skipped step must not count.
// LR: the learning rate as a 0-dim tensor on the parameters' device (float32 on CUDA; on the
// CPU float64, whose value the kernels read as a double), read by the kernel on the device
// instead of the group's lr. The group's lr must hold the same value.
// COUNT (Adam/AdamW): the step count the kernels read, a 0-dim float32 tensor on the
// parameters' device that the caller keeps (step_counter.hpp), one for every parameter; the
// host states' step is then left to the caller (StepCounter::settle). Throws Error when
// the parameters cannot share it: one with a state and no gradient, or one getting its first
// gradient after the others' first step. Without COUNT each stepped state's host count
// advances by one here and the kernels read it.
void fused_step(torch::optim::Optimizer& opt, OptimizerKind kind, const torch::Tensor* found_inf = nullptr,
                const torch::Tensor* lr = nullptr, const torch::Tensor* count = nullptr);

// The count OPT's next step runs at: its Adam/AdamW states' step + 1 (1 before any state; 0
// for SGD, which counts nothing). Throws Error when the states disagree (a parameter left
// without a gradient in some steps: the steps cannot share one count).
int64_t next_step_count(const torch::optim::Optimizer& opt, OptimizerKind kind);

// Every Adam/AdamW state of OPT at step STEPS (StepCounter::settle); nothing for SGD.
void set_step_count(torch::optim::Optimizer& opt, OptimizerKind kind, int64_t steps);

}  // namespace lockstep
