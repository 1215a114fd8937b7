// r3d: 3-D ResNet-10/18 for video clips (registry.hpp).
#include <torch/torch.h>

#include "core/base/error.hpp"
#include "core/model/activation_checkpoint.hpp"
#include "core/model/layers.hpp"
#include "core/model/max_pool_layer.hpp"
#include "core/model/registry.hpp"
#include "core/model/sync_bn.hpp"

namespace lockstep {
namespace {

namespace nn = torch::nn;

// Two 3x3x3 convolutions with a shortcut (1x1x1 + BatchNorm when the shape changes).
class Block3dImpl : public RecomputableBlock {
 public:
  Block3dImpl(int64_t in, int64_t out, int64_t stride)
      : conv1_(register_module("conv1", conv3d(in, out, 3, stride))),
        bn1_(register_module("bn1", BatchNorm(out))),
        conv2_(register_module("conv2", conv3d(out, out, 3))),
        bn2_(register_module("bn2", BatchNorm(out))) {
    if (stride != 1 || in != out) {
      down_conv_ = register_module("down_conv", conv3d(in, out, 1, stride));
      down_bn_ = register_module("down_bn", BatchNorm(out));
    }
  }
  torch::Tensor run(const torch::Tensor& x) override {
    const torch::Tensor y = conv2_(bn1_->forward_relu(conv1_(x)));
    const torch::Tensor shortcut = down_conv_ ? down_bn_(down_conv_(x)) : x;
    return bn2_->forward_relu(y, shortcut);
  }

 private:
  nn::Conv3d conv1_;
  BatchNorm bn1_;
  nn::Conv3d conv2_;
  BatchNorm bn2_;
  nn::Conv3d down_conv_{nullptr};
  BatchNorm down_bn_{nullptr};
};
TORCH_MODULE(Block3d);

class R3d final : public Net {
 public:
  R3d(const io::DatasetSpec& spec, int64_t w, int depth, double dropout, bool checkpoint) : checkpoint_(checkpoint) {
    const int64_t c = spec.sample_shape[0];
    small_input_ = spec.sample_shape[2] <= 64 && spec.sample_shape[3] <= 64;
    stem_ = register_module("stem", small_input_ ? conv3d(c, w, 3) : conv3d(c, w, {3, 7, 7}, {1, 2, 2}));
    stem_bn_ = register_module("stem_bn", BatchNorm(w));
    if (!small_input_)
      stem_pool_ = register_module("stem_pool", MaxPool(PoolWindow{{1, 3, 3}, {1, 2, 2}, {0, 1, 1}}));
    const int per_stage = depth == 10 ? 1 : 2;
    int64_t in = w;
    for (int stage = 0; stage < 4; ++stage) {
      const int64_t out = w << stage;
      for (int b = 0; b < per_stage; ++b) {
        blocks_.push_back(register_module("layer" + std::to_string(stage + 1) + "_" + std::to_string(b),
                                          Block3d(in, out, stage > 0 && b == 0 ? 2 : 1)));
        in = out;
      }
    }
    drop_ = register_module("drop", nn::Dropout(dropout));
    fc_ = register_module("fc", nn::Linear(in, spec.num_classes));
  }

  bool conv_net() const override { return true; }
  bool checkpoints_activations() const override { return true; }
  torch::Tensor forward(torch::Tensor x) override {
    x = formatted(x);
    x = stem_(x);
    x = small_input_ ? stem_bn_->forward_relu(x) : bn_relu_max_pool(*stem_bn_, x, *stem_pool_);
    for (auto& b : blocks_) x = run_block(*b, x, checkpoint_);
    return fc_(drop_(x.mean({2, 3, 4})));
  }

 private:
  bool checkpoint_, small_input_ = true;
  nn::Conv3d stem_{nullptr};
  BatchNorm stem_bn_{nullptr};
  MaxPool stem_pool_{nullptr};
  std::vector<Block3d> blocks_;
  nn::Dropout drop_{nullptr};
  nn::Linear fc_{nullptr};
};

}  // namespace

std::shared_ptr<Net> make_r3d(const ModelOptions& opt, const io::DatasetSpec& spec) {
  require_clip("r3d", spec, 1, 8);
  if (opt.depth != 10 && opt.depth != 18)
    throw UsageError("--model.depth must be 10 or 18 for r3d, not " + std::to_string(opt.depth));
  return std::make_shared<R3d>(spec, opt.width > 0 ? opt.width : 16, opt.depth, opt.dropout, opt.checkpoint_activations);
}

}  // namespace lockstep
