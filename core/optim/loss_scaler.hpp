// loss_scaler: dynamic loss scaling for fp16 (--train.amp fp16), kept on the device.
//
// 1. the loss is multiplied by the scale before backward (gradients are scaled too, and
//    the all-reduce averages them scaled);
// 2. after the all-reduce, gradients are unscaled and checked in one multi-tensor kernel
//    (_amp_foreach_non_finite_check_and_unscale_): any inf/NaN sets found-inf, the step is
//    skipped and counted, and the scale halves (never below 1);
// 3. after GROWTH_INTERVAL finite steps in a row the scale doubles (_amp_update_scale_).
// Scale, growth count, found-inf and the skip count are tensors on the gradients' device,
// as torch's GradScaler keeps them: nothing is read on the host in the step.
// - unscale_and_update_async() returns found-inf for the fused optimizers, whose kernels skip
//   the update on the device when it is set (fused_step.hpp; Adam's and AdamW's step count
//   is then kept on the device too, where a skipped step is taken back: step_counter.hpp);
// - unscale_and_update() reads it on the host instead (one sync per step), for the path that
//   must know before it steps: torch::optim's per-parameter step (--train.fused-optimizer
//   false).
// current_scale(), skipped() and state() read the device: log rows and checkpoints only.
// The gradients are identical on every rank after the all-reduce, so every rank makes the
// same decision without another collective. bf16 has float32's range: no scaling.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace lockstep {

class LossScaler {
 public:
  explicit LossScaler(bool enabled, torch::Device device = torch::kCPU, double init_scale = 65536.0,
                      int64_t growth_interval = 2000);
  bool enabled() const { return enabled_; }
  torch::Tensor scale(const torch::Tensor& loss) const { return enabled_ ? loss * scale_ : loss; }
  // Unscales the gradients of PARAMS in place and updates the scale, on the device. Returns
  // found-inf (a 0-dim float tensor, 1: skip this step); undefined when disabled or when no
  // parameter has a gradient.
  torch::Tensor unscale_and_update_async(const std::vector<torch::Tensor>& params);
  // The same, decided on the host: true when the step may run.
  bool unscale_and_update(const std::vector<torch::Tensor>& params);
  double current_scale() const;
  int64_t skipped() const;
  // For checkpoints: (scale, finite steps since the last change, skipped steps, the stall
  // streak below). load_state also takes the first three alone (checkpoints before 2026-11-28).
  std::vector<double> state() const;
  void load_state(const std::vector<double>& s);
  // At log rows and checkpoints, after global step STEP (reads the device): throws once the
  // last kStalledSteps steps in a row were each tried at the scale's floor of 1 and skipped —
  // gradients not finite even unscaled, which no scale fixes: fp16 would skip every step to
  // the end and finish as if it had trained. The streak is counted on the device in the step
  // (so inside a CUDA graph too), wherever the checks fall; identical on every rank (the
  // gradients are); saved in checkpoints, so a resume counts on (it counted afresh before, and
  // a resume that ended within kStalledSteps steps finished as if it had trained: a hostile
  // finding).
  static constexpr int64_t kStalledSteps = 10;
  void check_progress(int64_t step) const;

 private:
  bool enabled_;
  int64_t growth_interval_;
  torch::Tensor scale_;    // float32, 0-dim
  torch::Tensor growth_;   // int32, 0-dim: finite steps since the last change
  torch::Tensor skipped_;  // int64, 0-dim
  torch::Tensor floor_streak_;  // int64, 0-dim: steps in a row tried at the floor of 1 and skipped
};

}  // namespace lockstep
