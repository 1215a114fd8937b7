// max_pool_layer: see max_pool_layer.hpp.
#include "core/model/max_pool_layer.hpp"

#include <torch/torch.h>

namespace lockstep {

MaxPoolImpl::MaxPoolImpl(PoolWindow window) : window_(std::move(window)) {
  if (window_.stride.empty()) window_.stride = window_.kernel;
  if (window_.padding.empty()) window_.padding.assign(window_.kernel.size(), 0);
}

torch::Tensor MaxPoolImpl::forward(const torch::Tensor& x) {
  if (own_ && is_training()) {
    asked_ = true;
    const std::string why = max_pool_obstacle(x, window_);
    if (why.empty()) {
      ran_own_ = true;
      return max_pool(x, window_);
    }
    if (why_not_.empty()) why_not_ = why;  // the first refusal
  }
  const PoolWindow& w = window_;
  return w.kernel.size() == 2 ? torch::max_pool2d(x, w.kernel, w.stride, w.padding)
                              : torch::max_pool3d(x, w.kernel, w.stride, w.padding);
}

int set_max_pool_kernel(torch::nn::Module& module, bool own) {
  int n = 0;
  for (const auto& m : module.modules(/*include_self=*/true))
    if (auto* pool = dynamic_cast<MaxPoolImpl*>(m.get())) pool->set_own(own), ++n;
  return n;
}

std::string max_pool_report(torch::nn::Module& module) {
  int asked = 0, ran = 0;
  std::string first_not;
  for (const auto& item : module.named_modules("", /*include_self=*/true)) {
    const auto* pool = dynamic_cast<const MaxPoolImpl*>(item.value().get());
    if (pool == nullptr || !pool->asked_) continue;
    ++asked;
    if (pool->ran_own_) ++ran;
    else if (first_not.empty()) first_not = "; not " + item.key() + ": " + pool->why_not_;
  }
  return "lockstep max-pool: " + std::to_string(ran) + " of " + std::to_string(asked) +
         " max-pool layer(s) ran lockstep's kernels" + first_not;
}

}  // namespace lockstep
