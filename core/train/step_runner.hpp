// step_runner: the device step — one optimizer step of ACCUM micro-batches, and nothing of
// the loop around it (when to log, evaluate, checkpoint or stop is Trainer's).
//
// Per micro-batch: the batch to the device (BatchMaker) and its augmentation (pure in seed,
// epoch, micro-step and rank), forward under autocast, the loss scaled and backward, with
// the gradient reductions launched bucket by bucket as backward produces them (GradReducer;
// none on inner micro-steps). Then the wait for the reductions, the loss scaler, clipping and
// the optimizer (the fused kernels unless --train.fused-optimizer false). The phases are
// marked on the StepTimer as they are issued.
// Nothing here reads a device value on the host: the step's loss and correct count come back
// as device tensors, and the clipped-step counter stays on the device until clipped_steps()
// (log rows). fp16: the loss scaler's found-inf stays on the device for SGD's fused kernel;
// torch::optim's step and Adam/AdamW read it on the host (loss_scaler.hpp).
// On GPUs --debug.sync-check N turns this into a check: from global step N on, a host sync
// inside the step is an error naming the call (c10's sync debug mode), so a regression that
// stalls the device queue fails the GPU tests instead of slowing every step.
// The seam for a captured step (a CUDA graph) is run(): the loop never reaches inside it.
#pragma once

#include <torch/types.h>

#include <cstdint>

#include "core/train/objective.hpp"

namespace lockstep {

struct Session;
class StepTimer;
namespace io {
class EpochLoader;
}

struct StepOutput {
  torch::Tensor loss;     // the step's mean loss over its micro-batches, on the device
  torch::Tensor correct;  // correct predictions summed over them, on the device
};

class StepRunner {
 public:
  StepRunner(Session& s, StepTimer& timer);
  StepRunner(const StepRunner&) = delete;
  StepRunner& operator=(const StepRunner&) = delete;

  bool sequence() const { return objective_.sequence(); }
  // One optimizer step: optimizer step STEP of EPOCH (0-based, within the epoch) at LR;
  // GLOBAL_STEP is the run's step count before it (for --debug.sync-check).
  StepOutput run(io::EpochLoader& loader, int64_t step, int64_t epoch, double lr, int64_t global_step);
  // Steps whose gradient norm was clipped so far (reads the device counter: log rows only).
  int64_t clipped_steps() const;

 private:
  Session& s_;
  StepTimer& timer_;
  const Objective objective_;
  torch::Tensor clipped_;  // device counter of steps whose norm was clipped
};

}  // namespace lockstep
