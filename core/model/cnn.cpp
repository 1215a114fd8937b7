// cnn: the reference CNN for images (registry.hpp).
#include <torch/torch.h>

#include "core/base/error.hpp"
#include "core/model/layers.hpp"
#include "core/model/max_pool_layer.hpp"
#include "core/model/registry.hpp"
#include "core/model/sync_bn.hpp"

namespace lockstep {
namespace {

namespace nn = torch::nn;

class ReferenceCnn final : public Net {
 public:
  ReferenceCnn(int64_t channels, int64_t height, int64_t width, int64_t classes, int64_t w, double dropout)
      : conv1_(register_module("conv1", conv(channels, w, 3))),
        bn1_(register_module("bn1", BatchNorm(w))),
        conv2_(register_module("conv2", conv(w, 2 * w, 3))),
        bn2_(register_module("bn2", BatchNorm(2 * w))),
        pool1_(register_module("pool1", MaxPool(PoolWindow{{2, 2}}))),
        pool2_(register_module("pool2", MaxPool(PoolWindow{{2, 2}}))),
        fc1_(register_module("fc1", nn::Linear(2 * w * (height / 4) * (width / 4), 128))),
        drop_(register_module("drop", nn::Dropout(dropout))),
        fc2_(register_module("fc2", nn::Linear(128, classes))) {}

  bool conv_net() const override { return true; }
  torch::Tensor forward(torch::Tensor x) override {
    x = formatted(x);
    x = bn_relu_max_pool(*bn1_, conv1_(x), *pool1_);
    x = bn_relu_max_pool(*bn2_, conv2_(x), *pool2_);
    x = torch::relu(fc1_(x.flatten(1)));
    return fc2_(drop_(x));
  }

 private:
  nn::Conv2d conv1_;
  BatchNorm bn1_;
  nn::Conv2d conv2_;
  BatchNorm bn2_;
  MaxPool pool1_, pool2_;
  nn::Linear fc1_;
  nn::Dropout drop_;
  nn::Linear fc2_;
};

}  // namespace

std::shared_ptr<Net> make_cnn(const ModelOptions& opt, const io::DatasetSpec& spec) {
  require_image("cnn", spec, 4);
  const auto& s = spec.sample_shape;
  return std::make_shared<ReferenceCnn>(s[0], s[1], s[2], spec.num_classes, opt.width > 0 ? opt.width : 32,
                                        opt.dropout);
}

}  // namespace lockstep
