// amp: mixed precision (--train.amp none | bf16 | fp16): the autocast scope.
//
// Autocast runs the forward pass in the reduced type where torch's autocast lists allow it;
// parameters, gradients and the optimizer stay float32. fp16 also needs loss scaling
// (loss_scaler.hpp). Meant for CUDA; it also runs on CPU (autocast CPU), slowly, which is
// how CI tests it.
#pragma once

#include <torch/types.h>

#include "core/config/enums.hpp"

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

}  // namespace lockstep
