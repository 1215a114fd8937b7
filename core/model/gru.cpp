// gru: a CTC acoustic model for ragged series [C,T] with sequence targets (registry.hpp).
//
// Front-end conv1d (k5, stride 2, padding 2: T' = floor((T-1)/2) + 1) + BatchNorm + ReLU,
// then 2 bidirectional GRU layers over each sample's valid frames only (packed, so the
// backward direction never reads padding), then FC to tokens + 1 classes (blank last).
#include <torch/torch.h>

#include "core/base/error.hpp"
#include "core/model/layers.hpp"
#include "core/model/registry.hpp"
#include "core/model/sync_bn.hpp"

namespace lockstep {
namespace {

namespace nn = torch::nn;
namespace rnn = torch::nn::utils::rnn;

class Gru final : public Net {
 public:
  Gru(int64_t features, int64_t classes, int64_t hidden, double dropout) {
    conv_ = register_module("conv", nn::Conv1d(nn::Conv1dOptions(features, hidden, 5).stride(2).padding(2).bias(false)));
    bn_ = register_module("bn", BatchNorm(hidden));
    gru_ = register_module("gru", nn::GRU(nn::GRUOptions(hidden, hidden).num_layers(2).bidirectional(true)
                                              .batch_first(true).dropout(dropout)));
    drop_ = register_module("drop", nn::Dropout(dropout));
    fc_ = register_module("fc", nn::Linear(2 * hidden, classes));
  }

  bool sequence_output() const override { return true; }

  torch::Tensor forward(torch::Tensor x) override {
    torch::Tensor out_lengths;
    return forward_sequence(x, torch::full({x.size(0)}, x.size(-1), torch::kLong), &out_lengths);
  }

  torch::Tensor forward_sequence(torch::Tensor x, const torch::Tensor& lengths, torch::Tensor* out_lengths) override {
    x = torch::relu(bn_(conv_(x)));                    // [N, H, T']
    *out_lengths = torch::clamp_min(torch::floor_divide(lengths - 1, 2) + 1, 1).to(torch::kLong);
    const torch::Tensor seq = x.transpose(1, 2);       // [N, T', H]
    const auto packed = rnn::pack_padded_sequence(seq, *out_lengths, /*batch_first=*/true, /*enforce_sorted=*/false);
    const auto out = std::get<0>(gru_->forward_with_packed_input(packed));
    const torch::Tensor padded = std::get<0>(rnn::pad_packed_sequence(out, /*batch_first=*/true, 0.0, seq.size(1)));
    return fc_(drop_(padded));                         // [N, T', classes]
  }

 private:
  nn::Conv1d conv_{nullptr};
  BatchNorm bn_{nullptr};
  nn::GRU gru_{nullptr};
  nn::Dropout drop_{nullptr};
  nn::Linear fc_{nullptr};
};

}  // namespace

std::shared_ptr<Net> make_gru(const ModelOptions& opt, const io::DatasetSpec& spec) {
  if (!spec.sequence_outputs())
    throw UsageError("model 'gru' is a CTC sequence model; dataset '" + spec.name + "' has no sequence targets");
  const int64_t channels = require_series("gru", spec).first;
  return std::make_shared<Gru>(channels > 0 ? channels : 1, static_cast<int64_t>(spec.tokens.size()) + 1,
                               opt.width > 0 ? opt.width : 160, opt.dropout);
}

}  // namespace lockstep
