// step_runner: the device step — one optimizer step of ACCUM micro-batches, and nothing of
// the loop around it (when to log, evaluate, checkpoint or stop is Trainer's).
//
// Per micro-batch: the batch to the device (BatchFeed: one copy on a copy stream, a batch
// ahead of the device, straight out of the loader's pinned batch: batch_memory()),
// normalised (BatchMaker) and augmented (pure in seed, epoch, micro-step and rank), forward
// under autocast, the loss scaled and backward, with
// the gradient reductions launched bucket by bucket as backward produces them (GradReducer;
// none on inner micro-steps). Then the wait for the reductions, the loss scaler, clipping and
// the optimizer (the fused kernels unless --train.fused-optimizer false). The phases are
// marked on the StepTimer as they are issued.
// Nothing here reads a device value on the host: the step's loss and correct count come back
// as device tensors, and the clipped-step counter stays on the device until clipped_steps()
// (log rows). fp16: the loss scaler's found-inf stays on the device for the fused kernels, and
// so does Adam's and AdamW's step count (the Session's StepCounter); only torch::optim's step
// (--train.fused-optimizer false) reads it on the host (loss_scaler.hpp).
// On GPUs --debug.sync-check N turns this into a check: from global step N on, a host sync
// inside the step is an error naming the call (c10's sync debug mode), so a regression that
// stalls the device queue fails the GPU tests instead of slowing every step.
// On a GPU with one rank (several with `on`; static_step_obstacle() says where else), --train.cuda-graph auto|on
// hands the device step to StaticStep: the fed batch (stored dtype) is copied into its fixed
// buffers and normalised inside the step, captured as one CUDA graph after a warm-up and
// replayed (with augmentation the batch is prepared here, eagerly, and the floats handed
// in). The loop never reaches inside run().
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "core/base/fence.hpp"
#include "core/data/batch_feed.hpp"
#include "core/train/objective.hpp"
#include "core/train/static_step.hpp"

namespace lockstep {

struct Session;
class StepTimer;
namespace io {
class EpochLoader;
struct Batch;
}

class StepRunner {
 public:
  StepRunner(Session& s, StepTimer& timer);
  ~StepRunner();
  StepRunner(const StepRunner&) = delete;
  StepRunner& operator=(const StepRunner&) = delete;

  bool sequence() const { return objective_.sequence(); }
  // Where the training loader's batches should live (a GPU: pinned memory the feed copies
  // straight out of, io/loader/batch_pool.hpp); null where the feed reads plain memory.
  const HostBuffers* batch_memory() const { return batch_memory_ ? &*batch_memory_ : nullptr; }
  // One optimizer step: optimizer step STEP of EPOCH (0-based, within the epoch) at LR;
  // GLOBAL_STEP is the run's step count before it (for --debug.sync-check).
  StepOutput run(io::EpochLoader& loader, int64_t step, int64_t epoch, double lr, int64_t global_step);
  // Steps whose gradient norm was clipped so far (reads the device counter: log rows only).
  int64_t clipped_steps() const;
  // Collective (CTC), at EPOCH's end. Training samples no alignment existed for (a transcript
  // needing more frames than the model gives it) add 0 to the loss and train nothing: said,
  // and when none of the epoch's SAMPLES could be aligned the run ends (its loss of 0 looked
  // perfect). Counted by this process: after a mid-epoch resume, of the epoch's rest only.
  void check_alignments(int64_t epoch, double samples);

 private:
  // Fed batch F's inputs, normalised and augmented (micro-step MICRO of EPOCH).
  torch::Tensor inputs(const FedBatch& f, const io::Batch& b, int64_t micro, int64_t epoch) const;
  StepOutput run_static(io::EpochLoader& loader, int64_t step, int64_t epoch, double lr);
  StepOutput run_step(io::EpochLoader& loader, int64_t step, int64_t epoch, double lr, int64_t global_step);

  Session& s_;
  StepTimer& timer_;
  const Objective objective_;
  BatchFeed feed_;
  std::optional<HostBuffers> batch_memory_;  // a staged feed's (a GPU's)
  torch::Tensor clipped_;  // device counter of steps whose norm was clipped
  int64_t unaligned_ = 0;  // this rank's, since the last check_alignments
  std::unique_ptr<StaticStep> static_;  // --train.cuda-graph, where it applies
  bool kernels_reported_ = false;  // --model.fused-bn on / --model.max-pool lockstep: the first step logged
};

}  // namespace lockstep
