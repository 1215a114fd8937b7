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
  floor_streak_ = torch::zeros({}, on.dtype(torch::kLong));
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
  const torch::Tensor stuck = found_inf.gt(0).logical_and(scale_.le(1.0));  // tried at the floor, before the update
  at::_amp_update_scale_(scale_, growth_, found_inf, /*growth_factor=*/2.0, /*backoff_factor=*/0.5, growth_interval_);
  scale_.clamp_min_(1.0);
  skipped_.add_(found_inf.to(torch::kLong));
  floor_streak_.add_(1).mul_(stuck);
  return found_inf;
}

bool LossScaler::unscale_and_update(const std::vector<torch::Tensor>& params) {
  const torch::Tensor found_inf = unscale_and_update_async(params);
  return !found_inf.defined() || found_inf.item<float>() == 0.0f;  // the host sync of this path
}

double LossScaler::current_scale() const { return scale_.item<double>(); }
int64_t LossScaler::skipped() const { return skipped_.item<int64_t>(); }

std::vector<double> LossScaler::state() const {
  return {current_scale(), static_cast<double>(growth_.item<int>()), static_cast<double>(skipped()),
          static_cast<double>(floor_streak_.item<int64_t>())};
}

void LossScaler::load_state(const std::vector<double>& s) {
  if ((s.size() != 3 && s.size() != 4) || !enabled_) return;
  scale_.fill_(s[0]);
  growth_.fill_(static_cast<int>(s[1]));
  skipped_.fill_(static_cast<int64_t>(s[2]));
  floor_streak_.fill_(s.size() == 4 ? static_cast<int64_t>(s[3]) : int64_t{0});  // older checkpoints: none
}

void LossScaler::check_progress(int64_t step) const {
  if (!enabled_) return;
  const int64_t streak = floor_streak_.item<int64_t>();
  if (streak < kStalledSteps) return;
  throw Error(fmt::format("fp16: the last {} steps ({} to {}) were all skipped (gradients not finite) at the loss "
                          "scale's floor of 1, so nothing trains and the run stops here (its last checkpoint is "
                          "kept): the model or its data overflows float16; lower --train.lr, try --train.clip-norm, "
                          "or use --train.amp bf16 (float32's range)",
                          streak, step - streak + 1, step));
}

}  // namespace lockstep
