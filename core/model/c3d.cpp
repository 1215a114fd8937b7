// c3d: a small C3D-style network for video clips (registry.hpp).
#include <torch/torch.h>

#include "core/model/activation_checkpoint.hpp"
#include "core/model/layers.hpp"
#include "core/model/max_pool_layer.hpp"
#include "core/model/registry.hpp"
#include "core/model/sync_bn.hpp"

namespace lockstep {
namespace {

namespace nn = torch::nn;

// conv 3x3x3, BatchNorm, ReLU, then max-pool POOL (T x H x W; {1,1,1}: none).
class ConvBlockImpl : public RecomputableBlock {
 public:
  ConvBlockImpl(int64_t in, int64_t out, std::vector<int64_t> pool)
      : conv_(register_module("conv", conv3d(in, out, 3))), bn_(register_module("bn", BatchNorm(out))) {
    if (pool != std::vector<int64_t>{1, 1, 1}) pool_ = register_module("pool", MaxPool(PoolWindow{pool}));
  }
  torch::Tensor run(const torch::Tensor& x) override {
    const torch::Tensor y = conv_(x);
    return pool_.is_empty() ? bn_->forward_relu(y) : bn_relu_max_pool(*bn_, y, *pool_);
  }

 private:
  nn::Conv3d conv_;
  BatchNorm bn_;
  MaxPool pool_{nullptr};
};
TORCH_MODULE(ConvBlock);

class C3d final : public Net {
 public:
  C3d(const io::DatasetSpec& spec, int64_t w, double dropout, bool checkpoint) : checkpoint_(checkpoint) {
    const int64_t c = spec.sample_shape[0];
    const std::vector<std::vector<int64_t>> pools{{1, 2, 2}, {2, 2, 2}, {2, 2, 2}, {1, 1, 1}};
    int64_t in = c;
    for (size_t i = 0; i < pools.size(); ++i) {
      const int64_t out = w << i;
      blocks_.push_back(register_module("block" + std::to_string(i + 1), ConvBlock(in, out, pools[i])));
      in = out;
    }
    drop_ = register_module("drop", nn::Dropout(dropout));
    fc_ = register_module("fc", nn::Linear(in, spec.num_classes));
  }

  bool conv_net() const override { return true; }
  bool checkpoints_activations() const override { return true; }
  torch::Tensor forward(torch::Tensor x) override {
    x = formatted(x);
    for (auto& b : blocks_) x = run_block(*b, x, checkpoint_);
    return fc_(drop_(x.mean({2, 3, 4})));
  }

 private:
  bool checkpoint_;
  std::vector<ConvBlock> blocks_;
  nn::Dropout drop_{nullptr};
  nn::Linear fc_{nullptr};
};

}  // namespace

std::shared_ptr<Net> make_c3d(const ModelOptions& opt, const io::DatasetSpec& spec) {
  require_clip("c3d", spec, 4, 8);
  return std::make_shared<C3d>(spec, opt.width > 0 ? opt.width : 32, opt.dropout, opt.checkpoint_activations);
}

}  // namespace lockstep
