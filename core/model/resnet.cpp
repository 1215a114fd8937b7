// resnet: ResNet-18/34 for images with any channel count (registry.hpp).
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

class BasicBlockImpl : public RecomputableBlock {
 public:
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride)
      : conv1_(register_module("conv1", conv(in, out, 3, stride))),
        bn1_(register_module("bn1", BatchNorm(out))),
        conv2_(register_module("conv2", conv(out, out, 3))),
        bn2_(register_module("bn2", BatchNorm(out))) {
    if (stride != 1 || in != out) {
      down_conv_ = register_module("down_conv", conv(in, out, 1, stride));
      down_bn_ = register_module("down_bn", BatchNorm(out));
    }
  }
  torch::Tensor run(const torch::Tensor& x) override {
    const torch::Tensor y = conv2_(bn1_->forward_relu(conv1_(x)));
    const torch::Tensor shortcut = down_conv_ ? down_bn_(down_conv_(x)) : x;
    return bn2_->forward_relu(y, shortcut);
  }

 private:
  nn::Conv2d conv1_;
  BatchNorm bn1_;
  nn::Conv2d conv2_;
  BatchNorm bn2_;
  nn::Conv2d down_conv_{nullptr};
  BatchNorm down_bn_{nullptr};
};
TORCH_MODULE(BasicBlock);

class ResNet final : public Net {
 public:
  ResNet(const io::DatasetSpec& spec, int64_t w, int depth, double dropout, bool checkpoint) : checkpoint_(checkpoint) {
    const int64_t channels = spec.sample_shape[0];
    small_input_ = spec.sample_shape[1] <= 64 && spec.sample_shape[2] <= 64;
    stem_ = register_module("stem", small_input_ ? conv(channels, w, 3) : conv(channels, w, 7, 2));
    stem_bn_ = register_module("stem_bn", BatchNorm(w));
    if (!small_input_) stem_pool_ = register_module("stem_pool", MaxPool(PoolWindow{{3, 3}, {2, 2}, {1, 1}}));
    const std::vector<int> blocks = depth == 34 ? std::vector<int>{3, 4, 6, 3} : std::vector<int>{2, 2, 2, 2};
    int64_t in = w;
    for (size_t stage = 0; stage < blocks.size(); ++stage) {
      const int64_t out = w << stage;
      for (int b = 0; b < blocks[stage]; ++b) {
        const int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
        blocks_.push_back(register_module("layer" + std::to_string(stage + 1) + "_" + std::to_string(b),
                                          BasicBlock(in, out, stride)));
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
    for (auto& block : blocks_) x = run_block(*block, x, checkpoint_);
    return fc_(drop_(x.mean({2, 3})));
  }

 private:
  bool checkpoint_, small_input_ = true;
  nn::Conv2d stem_{nullptr};
  BatchNorm stem_bn_{nullptr};
  MaxPool stem_pool_{nullptr};
  std::vector<BasicBlock> blocks_;
  nn::Dropout drop_{nullptr};
  nn::Linear fc_{nullptr};
};

}  // namespace

std::shared_ptr<Net> make_resnet(const ModelOptions& opt, const io::DatasetSpec& spec) {
  require_image("resnet", spec, 8);
  if (opt.depth != 18 && opt.depth != 34)
    throw UsageError("--model.depth must be 18 or 34 for resnet, not " + std::to_string(opt.depth));
  return std::make_shared<ResNet>(spec, opt.width > 0 ? opt.width : 64, opt.depth, opt.dropout, opt.checkpoint_activations);
}

}  // namespace lockstep
