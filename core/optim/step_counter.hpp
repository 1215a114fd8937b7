// step_counter: Adam's and AdamW's step count kept on the device, where the fused kernels read
// it (fused_step.hpp), for the steps whose count the host cannot follow without reading the
// device: a step captured in a CUDA graph (a replay runs no host code) and an fp16 step the
// loss scaler may skip (its found-inf flag stays on the device: a skipped step does not count,
// as in torch::optim and PyTorch's fused Adam, whose state_steps are device tensors too).
//
// One count serves every parameter: they step together (the reducer gives every trainable
// parameter a gradient each step; fused_step refuses a parameter that would not).
// 1. start, at the first begin(): the count the optimizer's host states hold
//    (next_step_count - 1; 0 before any state), onto the parameters' device;
// 2. every step: begin() adds one on the device and returns the count for the kernels to
//    read; after them end(found_inf) takes a skipped step back (count -= found-inf). Device
//    operations only, captured with the step; the count keeps its address;
// 3. settle(): the host states' step := the device count (one read: a host sync, which waits
//    for the steps queued before it). The checkpointer calls it on every rank before a
//    checkpoint's state is taken, so a checkpoint holds the steps taken, as torch::optim's
//    would, and the ranks' host states stay alike; between checkpoints they lag;
// 4. restart(): the host states were replaced (a resume, before the first step): the next
//    begin() starts from them again.
// The count is float32 (the CUDA kernels read a float): exact up to 2^24 steps. Past that it
// stops growing (and a skipped step there takes one back: only approximate); settle() warns
// once. The updates are unaffected: with beta2 = 0.999 bias correction rounds to exactly 1
// in float32 after ~17k steps.
// SGD counts nothing: its step never calls begin(). Not thread-safe: the training thread's.
#pragma once

#include <torch/types.h>

#include "core/config/enums.hpp"

namespace torch::optim {
class Optimizer;
}

namespace lockstep {

class StepCounter {
 public:
  explicit StepCounter(torch::optim::Optimizer& opt);
  StepCounter(const StepCounter&) = delete;
  StepCounter& operator=(const StepCounter&) = delete;

  // The count this step runs at, on the device, one more than the last (the first call starts
  // it from the host states). Throws Error for SGD, or when the states are at different steps.
  const torch::Tensor& begin();
  // A step FOUND_INF (the loss scaler's 0-dim float32 flag, 1: skipped) skipped does not count.
  void end(const torch::Tensor& found_inf);
  // One fused optimizer step on the count (fused_step.hpp): begin(), the kernels (skipping on
  // FOUND_INF, reading LR when given; either may be null), end(). The steps' one way in.
  void step(const torch::Tensor* found_inf, const torch::Tensor* lr);
  // The host states' step := the count (reads the device). Nothing before the first begin().
  void settle();
  // The host states changed under it (a checkpoint loaded before the first step): the next
  // begin() starts from them. Throws Error once a step has run on the count (a CUDA graph may
  // hold its address, and the moments' the load replaced).
  void restart();
  bool started() const { return count_.defined(); }

 private:
  torch::optim::Optimizer& opt_;
  OptimizerKind kind_;
  torch::Tensor count_;  // float32, 0-dim, on the parameters' device; undefined until begin()
  bool warned_ = false;
};

}  // namespace lockstep
