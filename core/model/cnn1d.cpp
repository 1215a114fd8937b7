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
    if (one_channel_) x = x.unsqueeze(1);
    for (size_t i = 0; i < convs_.size(); ++i) {
      x = torch::relu(bns_[i](convs_[i](x)));
      if (pool_ && i + 1 < convs_.size()) x = F::max_pool1d(x, F::MaxPool1dFuncOptions(2));
    }
    return fc_(drop_(x.mean(2)));
  }

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
