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

}  // namespace lockstep
