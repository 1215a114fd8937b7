// loss: see loss.hpp.
#include "core/optim/loss.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "core/base/error.hpp"

namespace lockstep {

double mean_class_weight(const std::vector<double>& weights, const std::vector<int64_t>& histogram) {
  double weighted = 0, samples = 0;
  for (size_t c = 0; c < weights.size() && c < histogram.size(); ++c) {
    weighted += weights[c] * static_cast<double>(histogram[c]);
    samples += static_cast<double>(histogram[c]);
  }
  if (!(weighted > 0))
    throw UsageError("--train.class-weights: every class that has training samples weighs 0: no sample would count");
  return weighted / samples;
}

std::vector<double> class_weights(const std::string& spec, const std::vector<int64_t>& histogram) {
  if (spec == "none" || spec.empty()) return {};
  const size_t k = histogram.size();
  std::vector<double> w;
  if (spec == "auto") {
    int64_t total = 0;
    for (int64_t n : histogram) total += n;
    for (int64_t n : histogram)
      w.push_back(n > 0 ? static_cast<double>(total) / (static_cast<double>(k) * static_cast<double>(n)) : 0.0);
    mean_class_weight(w, histogram);  // refuses weights under which no training sample counts
    return w;
  }
  if (spec.back() == ',')
    throw UsageError("--train.class-weights '" + spec + "' ends with a comma (give " + std::to_string(k) +
                     " comma-separated weights)");
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    // strtod, not stod: an underflow (1e-400) is the finite 0, which stod refused as no number.
    char* end = nullptr;
    const double v = item.empty() ? NAN : std::strtod(item.c_str(), &end);
    const size_t used = end ? static_cast<size_t>(end - item.c_str()) : 0;
    if (used == 0 || used != item.size() || !std::isfinite(v) || v < 0 || v > 1e30)
      throw UsageError("--train.class-weights: '" + item + "' is not a number in [0, 1e30] (give auto, none or " +
                       std::to_string(k) + " comma-separated weights)");
    w.push_back(v);
  }
  if (w.size() != k)
    throw UsageError("--train.class-weights: " + std::to_string(w.size()) + " weights for a dataset of " +
                     std::to_string(k) + " classes");
  if (std::all_of(w.begin(), w.end(), [](double v) { return v == 0; }))
    throw UsageError("--train.class-weights: every weight is 0: no sample would count");
  mean_class_weight(w, histogram);  // refuses weights under which no training sample counts
  return w;
}

std::string class_weight_table(const std::vector<double>& weights, const std::vector<int64_t>& histogram,
                               const std::vector<std::string>& names) {
  int64_t total = 0;
  for (int64_t n : histogram) total += n;
  std::string out = "  class                 samples   share  weight";
  for (size_t c = 0; c < weights.size(); ++c) {
    std::string name = std::to_string(c) + (c < names.size() ? " " + names[c] : "");
    if (name.size() > 20) name.resize(20);
    char line[128];
    std::snprintf(line, sizeof line, "\n  %-20s %8lld  %5.1f%%  %6.3f", name.c_str(),
                  static_cast<long long>(c < histogram.size() ? histogram[c] : 0),
                  total > 0 && c < histogram.size() ? 100.0 * histogram[c] / total : 0.0, weights[c]);
    out += line;
  }
  return out;
}

Loss::Loss(std::vector<double> weights, double mean_weight, double label_smoothing, torch::Device device)
    : mean_weight_(mean_weight), smoothing_(label_smoothing) {
  if (!weights.empty())
    weight_ = torch::tensor(weights, torch::kDouble).to(torch::kFloat).to(device);
}

torch::Tensor Loss::operator()(const torch::Tensor& logits, const torch::Tensor& labels) const {
  auto opt = torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(smoothing_);
  if (!weight_.defined()) return torch::nn::functional::cross_entropy(logits.to(torch::kFloat), labels, opt);
  // sum w_y * loss over a constant (loss.hpp), never the batch's own weight sum: no 0/0 for a
  // batch whose samples all weigh 0 either, and every batch's terms count alike, smoothing's
  // included, however the global batch is split.
  opt.weight(weight_).reduction(torch::kSum);
  const torch::Tensor sum = torch::nn::functional::cross_entropy(logits.to(torch::kFloat), labels, opt);
  return sum * (1.0 / (static_cast<double>(std::max<int64_t>(1, logits.size(0))) * mean_weight_));
}

torch::Tensor ctc_loss_mean(const torch::Tensor& logits, const torch::Tensor& out_lengths, const torch::Tensor& targets,
                            const torch::Tensor& target_lengths, int64_t blank) {
  return ctc_loss_each(logits, out_lengths, targets, target_lengths, blank).mean();  // PyTorch's 'mean', as ATen forms it
}

torch::Tensor ctc_loss_each(const torch::Tensor& logits, const torch::Tensor& out_lengths, const torch::Tensor& targets,
                            const torch::Tensor& target_lengths, int64_t blank) {
  const torch::Tensor log_probs = torch::log_softmax(logits.to(torch::kFloat), -1).transpose(0, 1);  // [T, N, C]
  const torch::Tensor each = torch::nn::functional::ctc_loss(
      log_probs, targets, out_lengths.to(torch::kLong), target_lengths.to(torch::kLong),
      torch::nn::functional::CTCLossFuncOptions().blank(blank).reduction(torch::kNone).zero_infinity(true));
  return each / target_lengths.to(each.device()).clamp_min(1).to(each.scalar_type());
}

torch::Tensor unalignable(const torch::Tensor& out_lengths, const torch::Tensor& needed) {
  return out_lengths.to(torch::kCPU, torch::kLong) < needed;
}

}  // namespace lockstep
