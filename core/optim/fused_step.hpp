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

// Adam/AdamW's step count for the kernels to read on the device: COUNT, a float32 0-dim
// tensor on the parameters' device that the caller wrote, holds VALUE, the count this step
// runs at (every stepped parameter's state step + 1; 1 for a parameter without state yet).
// One tensor serves every parameter: the kernels only read it. A step captured in a CUDA
// graph reads each replay's count there (static_step.hpp).
struct DeviceStepCount {
  const torch::Tensor& count;
  int64_t value;
};

// One step of OPT, which make_optimizer built for KIND. Throws Error for sparse gradients
// (none of lockstep's models has them).
// FOUND_INF (SGD only; the fp16 loss scaler's, loss_scaler.hpp): the kernels skip the update
// on the device when it is set, so the step needs no host read. A momentum buffer created
// under it starts at zero and takes the first step's gradient through the kernel's ordinary
// update, which with dampening 0 (lockstep's SGD) is the same value torch::optim's first
// step copies; a skipped first step leaves it zero instead of uninitialised. Adam and AdamW
// count their steps on the host (torch::optim's state), so they take the host decision.
// LR: the learning rate as a 0-dim tensor on the parameters' device (float32 on CUDA; on the
// CPU float64, whose value the kernels read as a double), read by the kernel on the device
// instead of the group's lr. The group's lr must hold the same value.
// STEP (Adam/AdamW): the count the kernels read, instead of a tensor made here per parameter
// from the host count; throws Error when a stepped state is not at STEP->value - 1. Without
// STEP each stepped state's host count advances by one here; with it the caller advances
// them once the step has run (count_step), as a CUDA graph's replay runs no host code.
void fused_step(torch::optim::Optimizer& opt, OptimizerKind kind, const torch::Tensor* found_inf = nullptr,
                const torch::Tensor* lr = nullptr, const DeviceStepCount* step = nullptr);

// The count OPT's next step runs at: its Adam/AdamW states' step + 1 (1 before any state; 0
// for SGD, which counts nothing). Throws Error when the states disagree (a parameter left
// without a gradient in some steps: the steps cannot share one count).
int64_t next_step_count(const torch::optim::Optimizer& opt, OptimizerKind kind);

// After a step through fused_step with STEP (run eagerly or replayed from a CUDA graph): the
// states of the parameters that have a gradient, the ones it stepped, count it (Adam/AdamW).
void count_step(torch::optim::Optimizer& opt, OptimizerKind kind);

}  // namespace lockstep
