// layers: see layers.hpp.
#include "core/model/layers.hpp"

#include <torch/torch.h>

#include "core/base/error.hpp"
#include "core/model/max_pool_layer.hpp"
#include "core/model/sync_bn.hpp"

namespace lockstep {

namespace nn = torch::nn;

nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(k / 2).bias(false));
}

nn::Conv3d conv3d(int64_t in, int64_t out, torch::ExpandingArray<3> k, torch::ExpandingArray<3> stride) {
  const torch::ExpandingArray<3> pad({(*k)[0] / 2, (*k)[1] / 2, (*k)[2] / 2});
  return nn::Conv3d(nn::Conv3dOptions(in, out, k).stride(stride).padding(pad).bias(false));
}

torch::Tensor relu_max_pool(const torch::Tensor& x, MaxPoolImpl& pool) { return pool.forward(x).relu_(); }

torch::Tensor bn_relu_max_pool(BatchNormImpl& bn, const torch::Tensor& x, MaxPoolImpl& pool) {
  if (torch::Tensor y = bn.forward_relu_fused(x); y.defined()) return pool.forward(y);
  return relu_max_pool(bn.forward(x), pool);
}

void require_clip(const std::string& model, const io::DatasetSpec& spec, int64_t min_t, int64_t min_side) {
  const auto& s = spec.sample_shape;
  if (s.size() != 4 || s[1] < min_t || s[2] < min_side || s[3] < min_side)
    throw UsageError("model '" + model + "' needs video clips [C,T,H,W] with T >= " + std::to_string(min_t) +
                     " and H,W >= " + std::to_string(min_side) + "; dataset '" + spec.name + "' has shape " +
                     c10::str(s));
}

void require_image(const std::string& model, const io::DatasetSpec& spec, int64_t min_side) {
  const auto& s = spec.sample_shape;
  if (s.size() != 3 || s[1] < min_side || s[2] < min_side)
    throw UsageError("model '" + model + "' needs image samples [C,H,W] with H,W >= " + std::to_string(min_side) +
                     "; dataset '" + spec.name + "' has shape " + c10::str(s));
}

std::pair<int64_t, int64_t> require_series(const std::string& model, const io::DatasetSpec& spec) {
  const auto& s = spec.sample_shape;
  if (s.empty() || s.size() > 2 || s.back() < 2)
    throw UsageError("model '" + model + "' needs time-series samples [C,L] or [L]; dataset '" + spec.name +
                     "' has shape " + c10::str(s));
  return {s.size() == 2 ? s[0] : 0, s.back()};
}

}  // namespace lockstep
