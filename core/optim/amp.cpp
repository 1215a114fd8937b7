// amp: see amp.hpp.
#include "core/optim/amp.hpp"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

namespace lockstep {

AutocastGuard::AutocastGuard(Amp mode, torch::Device device) {
  if (mode == Amp::kNone) return;
  active_ = true;
  type_ = device.type();
  was_enabled_ = at::autocast::is_autocast_enabled(type_);
  old_dtype_ = at::autocast::get_autocast_dtype(type_);
  at::autocast::set_autocast_enabled(type_, true);
  at::autocast::set_autocast_dtype(type_, mode == Amp::kBf16 ? at::kBFloat16 : at::kHalf);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(type_, was_enabled_);
  at::autocast::set_autocast_dtype(type_, old_dtype_);
}

LossScaler::LossScaler(bool enabled, double init_scale, int64_t growth_interval)
    : enabled_(enabled), scale_(enabled ? init_scale : 1.0), growth_interval_(growth_interval) {}

bool LossScaler::unscale_and_update(const std::vector<torch::Tensor>& params) {
  if (!enabled_) return true;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return true;
  auto found_inf = torch::zeros({1}, grads[0].options().dtype(torch::kFloat));
  const auto inv_scale = torch::full({1}, 1.0 / scale_, found_inf.options());
  at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
  if (found_inf.item<float>() > 0) {  // the one host sync of an fp16 step, as in torch's GradScaler
    scale_ = std::max(scale_ * 0.5, 1.0);
    good_steps_ = 0;
    ++skipped_;
    return false;
  }
  if (++good_steps_ >= growth_interval_) {
    scale_ *= 2.0;
    good_steps_ = 0;
  }
  return true;
}

std::vector<double> LossScaler::state() const {
  return {scale_, static_cast<double>(good_steps_), static_cast<double>(skipped_)};
}

void LossScaler::load_state(const std::vector<double>& s) {
  if (s.size() != 3 || !enabled_) return;
  scale_ = s[0];
  good_steps_ = static_cast<int64_t>(s[1]);
  skipped_ = static_cast<int64_t>(s[2]);
}

}  // namespace lockstep
