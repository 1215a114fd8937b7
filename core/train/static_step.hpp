// static_step: the device step over fixed buffers — and on a GPU captured once as a CUDA
// graph and replayed (--train.cuda-graph), so a step costs one launch instead of hundreds.
//
// A replay runs the same kernels on the same addresses, so everything the step reads or
// writes stays where it is from one step to the next:
//   - the batch is copied into one input and one label buffer; the input is what the feed
//     delivered, in the stored dtype, and the step's PREPARE (conversion and normalisation:
//     BatchMaker::normalise) runs inside it, captured too. With augmentation (its draws
//     change every step) StepRunner prepares the batch eagerly and hands in floats, and
//     PREPARE is empty;
//   - gradients are set to none before the step, as the eager step does: backward creates
//     them; in the captured step it creates them in the graph's memory pool, so every
//     replay writes the same tensors (PyTorch's whole-network capture recipe). At several
//     ranks the reducer's hooks copy them into the gradient buckets, whose slots become the
//     gradients (grad_reducer.hpp): the bucketed all-reduces are captured too, on NCCL's
//     stream forked from and joined back into the step's, and after each replay the
//     watchdog watches it (the captured collectives' own events are never recorded);
//   - the learning rate is a device tensor written before each step; Adam's and AdamW's step
//     count is the StepCounter's device tensor, advanced inside the step (and taken back there
//     when the fp16 loss scaler skips it); the fused kernels read both there (fused_step.hpp).
//     The checkpointer settles the optimizer's host step counts from it (step_counter.hpp);
//   - the loss and correct count are written into output tensors; clipped steps are
//     counted in place; momentum buffers and the fp16 loss scale are updated in place.
// Protocol (CUDA, capture on):
//   1. the first kWarmupSteps steps run the body eagerly (cuDNN's algorithm search, the
//      optimizer's state — momentum buffers, Adam's moments —, the allocator's first blocks;
//      a state created while capturing is an error);
//   2. the next step is captured (nothing runs while capturing) and then replayed: that
//      replay is the step; a capture that fails is one warning naming why, and the body
//      runs eagerly from then on — at one rank; at several it is an error (the other
//      ranks' replays hold the all-reduces this rank would then start eagerly);
//   3. every later step: the batch copied in, the lr written, one replay.
// The run must be on a side stream (RunStream): CUDA captures no legacy default stream; the
// reducer attaches its hooks in the step, on that stream (grad_reducer.hpp). A graph that
// holds NCCL work must be destroyed before its communicator (ncclCommDestroy waits for
// every graph holding it): StaticStep goes with the Trainer, before Session::close().
// Where it applies: static_step_obstacle(). On the CPU (tests) the body runs without
// capture, and equals StepRunner's eager step bit for bit.
// Not thread-safe; the training thread alone calls it.
#pragma once

#include <torch/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/train/objective.hpp"

namespace torch::optim {
class Optimizer;
}

namespace lockstep {

class GradReducer;
class LossScaler;
class StepCounter;
class StepTimer;

// What the step works on; owned by the Session.
struct StaticStepParts {
  Net& model;
  torch::optim::Optimizer& opt;
  GradReducer& reducer;
  LossScaler& scaler;
  StepCounter& counter;  // Adam/AdamW's step count (unused for SGD)
  const Objective& objective;
  const std::vector<torch::Tensor>& trainable;
  Amp amp = Amp::kNone;
  double clip_norm = 0;  // > 0: clip the gradients' global norm
  torch::Device device = torch::kCPU;
  // The input buffer -> the model's input, inside the step (empty: the input as it is). It
  // must not read device values on the host (it is captured).
  std::function<torch::Tensor(const torch::Tensor&)> prepare;
};

// The facts static_step_obstacle() judges, gathered by the caller.
struct StaticStepCase {
  CudaGraph mode = CudaGraph::kAuto;  // --train.cuda-graph
  bool cuda = false;
  int world = 1;
  bool class_labels = true;  // not CTC sequence targets
  bool ragged = false;
  int64_t grad_accum = 1;
  OptimizerKind optimizer = OptimizerKind::kSgd;
  Amp amp = Amp::kNone;
  bool fused_optimizer = true;
  bool sync_bn = false;
  bool checkpoint_activations = false;
};
// Why the whole step cannot be one CUDA graph here ("" when it can), e.g. "ragged series
// change shape every batch". Several ranks: only with --train.cuda-graph on for now.
std::string static_step_obstacle(const StaticStepCase& c);

struct StepOutput {
  torch::Tensor loss;     // the step's mean loss over its micro-batches, on the device
  torch::Tensor correct;  // correct predictions summed over them, on the device
};

class StaticStep {
 public:
  static constexpr int kWarmupSteps = 3;
  // CAPTURE: capture and replay after the warm-up (CUDA only).
  StaticStep(StaticStepParts parts, bool capture);
  ~StaticStep();
  StaticStep(const StaticStep&) = delete;
  StaticStep& operator=(const StaticStep&) = delete;

  // One optimizer step on the batch X (inputs, before PREPARE) and Y (labels, int64), both
  // on the device, at LR. TIMER (may be null) gets the phase marks: per phase when eager, the
  // whole replay as the forward phase when replayed.
  StepOutput run(const torch::Tensor& x, const torch::Tensor& y, double lr, StepTimer* timer);
  bool replaying() const;         // a graph is captured and in use
  int64_t clipped_steps() const;  // reads the device counter (log rows)
  // For tests: addresses must not move.
  std::vector<torch::Tensor> buffers() const { return {x_, y_, lr_}; }

 private:
  void body(StepTimer* timer);  // the step on x_, y_, lr_: eager, or recorded while capturing
  bool capture();               // CUDA: records body(); false (and a warning) when it cannot

  StaticStepParts p_;
  OptimizerKind kind_;  // what make_optimizer built p_.opt as
  bool capture_;
  int64_t steps_ = 0;
  torch::Tensor x_, y_, lr_, loss_, correct_, clipped_;
  struct Graph;
  std::unique_ptr<Graph> graph_;
};

}  // namespace lockstep
