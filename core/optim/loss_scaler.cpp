// loss_scaler: see loss_scaler.hpp.
#include "core/optim/loss_scaler.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include "core/base/error.hpp"

namespace lockstep {

LossScaler::LossScaler(bool enabled, torch::Device device, double init_scale, int64_t growth_interval)
    : enabled_(enabled), growth_interval_(growth_interval) {
  const auto on = torch::TensorOptions().device(device);
  scale_ = torch::full({}, enabled ? init_scale : 1.0, on.dtype(torch::kFloat));
  growth_ = torch::zeros({}, on.dtype(torch::kInt));
  skipped_ = torch::zeros({}, on.dtype(torch::kLong));
}

torch::Tensor LossScaler::unscale_and_update_async(const std::vector<torch::Tensor>& params) {
  if (!enabled_) return {};
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return {};
  torch::Tensor found_inf = torch::zeros({}, scale_.options());
  // The reciprocal of a power of two is exact in float32, as GradScaler computes it.
  at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, scale_.to(torch::kDouble).reciprocal().to(torch::kFloat));
  at::_amp_update_scale_(scale_, growth_, found_inf, /*growth_factor=*/2.0, /*backoff_factor=*/0.5, growth_interval_);
  scale_.clamp_min_(1.0);
  skipped_.add_(found_inf.to(torch::kLong));
  return found_inf;
}

bool LossScaler::unscale_and_update(const std::vector<torch::Tensor>& params) {
  const torch::Tensor found_inf = unscale_and_update_async(params);
  return !found_inf.defined() || found_inf.item<float>() == 0.0f;  // the host sync of this path
}

double LossScaler::current_scale() const { return scale_.item<double>(); }
int64_t LossScaler::skipped() const { return skipped_.item<int64_t>(); }

std::vector<double> LossScaler::state() const {
  return {current_scale(), static_cast<double>(growth_.item<int>()), static_cast<double>(skipped())};
}

void LossScaler::load_state(const std::vector<double>& s, int64_t step) {
  checked_step_ = step;
  checked_skips_ = 0;
  if (s.size() != 3 || !enabled_) return;  // not an fp16 checkpoint: the scaler starts afresh
  scale_.fill_(s[0]);
  growth_.fill_(static_cast<int>(s[1]));
  skipped_.fill_(static_cast<int64_t>(s[2]));
  checked_skips_ = static_cast<int64_t>(s[2]);
}

void LossScaler::check_progress(int64_t step) {
  if (!enabled_ || step <= checked_step_) return;
  const int64_t from = checked_step_ + 1, skips = skipped();
  const bool stalled = skips - checked_skips_ >= step - checked_step_ && current_scale() <= 1.0;
  checked_step_ = step;
  checked_skips_ = skips;
  if (stalled)
    throw Error(fmt::format("fp16: steps {} to {} were all skipped (gradients not finite) with the loss scale at its "
                            "floor of 1, so nothing trains and the run stops here (its last checkpoint is kept): the "
                            "model or its data overflows float16; lower --train.lr, try --train.clip-norm, or use "
                            "--train.amp bf16 (float32's range)",
                            from, step));
}

}  // namespace lockstep
