// cnn1d: a 1-D CNN for time series [C,L] or [L] (registry.hpp).
#include <torch/torch.h>

#include "core/base/error.hpp"
#include "core/model/layers.hpp"
#include "core/model/registry.hpp"
#include "core/model/sync_bn.hpp"

namespace lockstep {
namespace {

namespace F = torch::nn::functional;
namespace nn = torch::nn;

class Cnn1d final : public Net {
 public:
  Cnn1d(int64_t channels, int64_t length, int64_t classes, int64_t w, double dropout) : one_channel_(channels == 0) {
    int64_t in = one_channel_ ? 1 : channels;
    const int64_t widths[3] = {w, 2 * w, 2 * w};
    for (int i = 0; i < 3; ++i) {
      convs_.push_back(register_module("conv" + std::to_string(i + 1),
                                       nn::Conv1d(nn::Conv1dOptions(in, widths[i], 5).padding(2).bias(false))));
      bns_.push_back(register_module("bn" + std::to_string(i + 1), BatchNorm(widths[i])));
      in = widths[i];
    }
    pool_ = length >= 8;
    drop_ = register_module("drop", nn::Dropout(dropout));
    fc_ = register_module("fc", nn::Linear(in, classes));
  }

  torch::Tensor forward(torch::Tensor x) override {
    torch::Tensor no_lengths;
    return fc_(drop_(features(x, no_lengths).mean(2)));
  }

  bool takes_ragged() const override { return true; }

  // Every layer's output is zeroed past each sample's valid steps (so a sample's logits do
  // not depend on its padding), and the global average is over the valid steps only.
  torch::Tensor forward_ragged(torch::Tensor x, const torch::Tensor& lengths) override {
    torch::Tensor len = lengths.to(torch::kLong).to(x.device());
    // A batch cut to fewer than 4 steps (short series, bucketed together) is padded to 4: the
    // two pools halve it, and a pool over one step has no output (LibTorch refused the batch).
    // The padding is masked like any other, so a sample's logits are those of a longer batch.
    if (pool_ && x.size(-1) < 4) x = F::pad(x, F::PadFuncOptions({0, 4 - x.size(-1)}));
    const torch::Tensor f = features(x, len);  // [N, C, T'], LEN now T' per sample
    return fc_(drop_(f.sum(2) / len.unsqueeze(1).to(f.scalar_type())));
  }

 private:
  // LEN defined: masks padding after every layer and ends as each sample's valid length
  // at the output's resolution (each pool halves it).
  torch::Tensor features(torch::Tensor x, torch::Tensor& len) {
    if (one_channel_) x = x.unsqueeze(1);
    const auto mask = [&](const torch::Tensor& t) {
      if (!len.defined()) return t;
      const torch::Tensor steps = torch::arange(t.size(2), torch::TensorOptions().dtype(torch::kLong).device(t.device()));
      return t * steps.unsqueeze(0).lt(len.unsqueeze(1)).unsqueeze(1).to(t.scalar_type());
    };
    for (size_t i = 0; i < convs_.size(); ++i) {
      x = mask(torch::relu(bns_[i](convs_[i](x))));
      if (pool_ && i + 1 < convs_.size()) {
        x = F::max_pool1d(x, F::MaxPool1dFuncOptions(2));
        if (len.defined()) len = torch::clamp_max(torch::clamp_min(torch::floor_divide(len, 2), 1), x.size(2));
        x = mask(x);
      }
    }
    return x;
  }

 public:

 private:
  bool one_channel_;
  bool pool_ = true;
  std::vector<nn::Conv1d> convs_;
  std::vector<BatchNorm> bns_;
  nn::Dropout drop_{nullptr};
  nn::Linear fc_{nullptr};
};

}  // namespace

std::shared_ptr<Net> make_cnn1d(const ModelOptions& opt, const io::DatasetSpec& spec) {
  const auto [channels, length] = require_series("cnn1d", spec);
  return std::make_shared<Cnn1d>(channels, length, spec.num_classes, opt.width > 0 ? opt.width : 64, opt.dropout);
}

}  // namespace lockstep
