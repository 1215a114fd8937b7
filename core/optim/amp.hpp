// amp: mixed precision (--train.amp none | bf16 | fp16).
//
// Autocast runs the forward pass in the reduced type where torch's autocast lists allow it;
// parameters, gradients and the optimizer stay float32. fp16 needs loss scaling:
// 1. the loss is multiplied by the scale before backward (gradients are scaled too, and
//    the all-reduce averages them scaled);
// 2. after the all-reduce, gradients are unscaled and checked: any inf/NaN means the step
//    is skipped (the optimizer does not run) and counted, and the scale halves;
// 3. after GROWTH_INTERVAL finite steps in a row the scale doubles.
// The gradients are identical on every rank after the all-reduce, so every rank makes the
// same decision without another collective. bf16 has float32's range: no scaling.
// Meant for CUDA; it also runs on CPU (autocast CPU), slowly, which is how CI tests it.
#pragma once

#include <torch/types.h>

#include <string>

#include "core/config/enums.hpp"
#include <vector>

namespace lockstep {

// Autocast on for DEVICE's type in the guard's scope (Amp::kNone: does nothing).
class AutocastGuard {
 public:
  AutocastGuard(Amp mode, torch::Device device);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType type_ = c10::DeviceType::CPU;
  bool was_enabled_ = false;
  at::ScalarType old_dtype_ = at::kFloat;
};

class LossScaler {
 public:
  explicit LossScaler(bool enabled, double init_scale = 65536.0, int64_t growth_interval = 2000);
  bool enabled() const { return enabled_; }
  torch::Tensor scale(const torch::Tensor& loss) const { return enabled_ ? loss * scale_ : loss; }
  // Unscales GRADS in place; true when all are finite (the step may run). Updates the scale.
  bool unscale_and_update(const std::vector<torch::Tensor>& params);
  double current_scale() const { return scale_; }
  int64_t skipped() const { return skipped_; }
  // For checkpoints: (scale, finite steps since the last change, skipped steps).
  std::vector<double> state() const;
  void load_state(const std::vector<double>& s);

 private:
  bool enabled_;
  double scale_;
  int64_t growth_interval_;
  int64_t good_steps_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace lockstep
