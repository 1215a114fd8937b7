// lmu: a Legendre Memory Unit network for time series [C,L] (or [L]) (registry.hpp).
//
// The LMU cell (Voelker, Kajić & Eliasmith, NeurIPS 2019): a linear memory m (ORDER
// Legendre coefficients of the last THETA steps of a scalar signal u) and a nonlinear
// hidden state h,
//   u_t = e_x.x_t + e_h.h_{t-1} + e_m.m_{t-1}
//   m_t = Abar m_{t-1} + Bbar u_t
//   h_t = tanh(W_x x_t + W_h h_{t-1} + W_m m_t)
// where Abar, Bbar are the zero-order-hold discretisation (dt = 1) of the continuous
// Legendre delay system A (i, j < ORDER): (2i+1)/THETA * (i < j ? -1 : (-1)^(i-j+1)),
// B_i = (2i+1)(-1)^i / THETA, computed once as expm([[A, B], [0, 0]]) and kept as
// buffers. Here THETA = L (the memory spans the window), ORDER = min(64, L), hidden units
// WIDTH (128); e_h and e_m start at zero. The last h goes through dropout to the
// classifier. Reference module: docs/python/lockstep_models.py (Lmu).
// Sequence targets (CTC, e.g. speech): every step's h goes through dropout to FC (tokens +
// blank), one output per input frame; the memory then spans THETA = min(L, 50) frames
// (half a second of 10 ms frames) with ORDER = min(32, THETA). Causal: padding after a
// sample's length never reaches its valid frames.
// Computed as one autograd node over all steps (lmu_scan.hpp: the three updates folded into
// one matrix product and a tanh per step, in float32 under autocast too); the parameters,
// their names and checkpoints are the cell's as written above.
#include <torch/torch.h>

#include <algorithm>

#include "core/base/error.hpp"
#include "core/model/layers.hpp"
#include "core/model/lmu_scan.hpp"
#include "core/model/registry.hpp"

namespace lockstep {
namespace {

namespace nn = torch::nn;

// (Abar [order, order], Bbar [order]) for a Legendre delay of THETA steps.
std::pair<torch::Tensor, torch::Tensor> legendre_delay(int64_t order, double theta) {
  auto m = torch::zeros({order + 1, order + 1}, torch::kFloat64);
  auto a = m.accessor<double, 2>();
  for (int64_t i = 0; i < order; ++i) {
    const double r = static_cast<double>(2 * i + 1) / theta;
    for (int64_t j = 0; j < order; ++j) a[i][j] = r * (i < j ? -1.0 : ((i - j + 1) % 2 == 0 ? 1.0 : -1.0));
    a[i][order] = r * (i % 2 == 0 ? 1.0 : -1.0);  // B
  }
  const torch::Tensor e = torch::matrix_exp(m);
  return {e.slice(0, 0, order).slice(1, 0, order).to(torch::kFloat32).contiguous(),
          e.slice(0, 0, order).select(1, order).to(torch::kFloat32).contiguous()};
}

class Lmu final : public Net {
 public:
  Lmu(int64_t channels, int64_t length, int64_t classes, int64_t hidden, double dropout, bool sequence)
      : one_channel_(channels == 0),
        sequence_(sequence),
        hidden_(hidden),
        order_(sequence ? std::min<int64_t>(32, std::min<int64_t>(50, length)) : std::min<int64_t>(64, length)) {
    const int64_t in = one_channel_ ? 1 : channels;
    e_x_ = register_module("e_x", nn::Linear(nn::LinearOptions(in, 1).bias(false)));
    e_h_ = register_module("e_h", nn::Linear(nn::LinearOptions(hidden, 1).bias(false)));
    e_m_ = register_module("e_m", nn::Linear(nn::LinearOptions(order_, 1).bias(false)));
    w_x_ = register_module("w_x", nn::Linear(in, hidden));
    w_h_ = register_module("w_h", nn::Linear(nn::LinearOptions(hidden, hidden).bias(false)));
    w_m_ = register_module("w_m", nn::Linear(nn::LinearOptions(order_, hidden).bias(false)));
    drop_ = register_module("drop", nn::Dropout(dropout));
    fc_ = register_module("fc", nn::Linear(hidden, classes));
    {
      torch::NoGradGuard no_grad;
      e_h_->weight.zero_();
      e_m_->weight.zero_();
    }
    auto [abar, bbar] = legendre_delay(order_, static_cast<double>(sequence ? std::min<int64_t>(50, length) : length));
    abar_t_ = register_buffer("abar_t", abar.t().contiguous());  // m_t = m_{t-1} @ Abar^T + u Bbar
    bbar_ = register_buffer("bbar", bbar.unsqueeze(0));
  }

  bool sequence_output() const override { return sequence_; }

  torch::Tensor forward(torch::Tensor x) override {
    if (sequence_) {
      torch::Tensor out_lengths;
      return forward_sequence(x, torch::full({x.size(0)}, x.size(-1), torch::kLong), &out_lengths);
    }
    return fc_(drop_(hidden_states(x).select(0, -1)));
  }

  bool takes_ragged() const override { return !sequence_; }

  // The hidden state at each sample's last valid step (the recurrence is causal).
  torch::Tensor forward_ragged(torch::Tensor x, const torch::Tensor& lengths) override {
    const torch::Tensor all = hidden_states(x);  // [L, N, H]
    const torch::Tensor last = (torch::clamp(lengths.to(torch::kLong), 1, all.size(0)) - 1).to(all.device());
    const torch::Tensor h = all.gather(0, last.view({1, -1, 1}).expand({1, all.size(1), all.size(2)})).squeeze(0);
    return fc_(drop_(h));
  }

  torch::Tensor forward_sequence(torch::Tensor x, const torch::Tensor& lengths, torch::Tensor* out_lengths) override {
    *out_lengths = lengths.to(torch::kLong);
    return fc_(drop_(hidden_states(x).transpose(0, 1)));  // [N, L, classes]
  }

 private:
  // Every step's hidden state [L, N, H], through lmu_scan.hpp's folded form of the cell.
  torch::Tensor hidden_states(torch::Tensor x) {
    if (one_channel_) x = x.unsqueeze(1);
    const torch::Tensor xs = x.permute({2, 0, 1});  // [L, N, C]
    const torch::Tensor ux = e_x_(xs), hx = w_x_(xs);  // the input's terms, all steps at once
    const LmuFold fold = lmu_fold({e_h_->weight, e_m_->weight, w_h_->weight, w_m_->weight, abar_t_, bbar_}, ux, hx);
    return lmu_scan(fold.c, fold.w, hidden_).narrow(2, 0, hidden_);
  }

  bool one_channel_, sequence_;
  int64_t hidden_, order_;
  nn::Linear e_x_{nullptr}, e_h_{nullptr}, e_m_{nullptr}, w_x_{nullptr}, w_h_{nullptr}, w_m_{nullptr};
  nn::Dropout drop_{nullptr};
  nn::Linear fc_{nullptr};
  torch::Tensor abar_t_, bbar_;
};

}  // namespace

std::shared_ptr<Net> make_lmu(const ModelOptions& opt, const io::DatasetSpec& spec) {
  const auto [channels, length] = require_series("lmu", spec);
  const bool sequence = spec.sequence_outputs();
  return std::make_shared<Lmu>(channels, length, sequence ? static_cast<int64_t>(spec.tokens.size()) + 1 : spec.num_classes,
                               opt.width > 0 ? opt.width : 128, opt.dropout, sequence);
}

}  // namespace lockstep
