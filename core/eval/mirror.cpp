// mirror: see mirror.hpp.
#include "core/eval/mirror.hpp"

#include <torch/torch.h>

#include <cmath>

#include "core/base/error.hpp"
#include "core/model/registry.hpp"

namespace lockstep {

torch::Tensor eval_logits(Net& net, const torch::Tensor& x, const torch::Tensor& lengths, bool hflip) {
  if (!hflip) return class_logits(net, x, lengths).to(torch::kFloat);
  LOCKSTEP_REQUIRE(!lengths.defined() && (x.dim() == 4 || x.dim() == 5),
                   "--eval.hflip needs [N, C, H, W] or [N, C, T, H, W] batches, got " + std::to_string(x.dim()) + "-d");
  const int64_t n = x.size(0);
  const torch::Tensor both = torch::log_softmax(class_logits(net, torch::cat({x, x.flip({-1})}), lengths).to(torch::kFloat), 1);
  // log((e^a + e^b) / 2) of the two log-softmaxes: stable, and its softmax is the average.
  return torch::logaddexp(both.slice(0, 0, n), both.slice(0, n)) - std::log(2.0);
}

void check_eval_hflip(bool hflip, const io::DatasetSpec& spec, const std::string& data) {
  if (!hflip) return;
  if (spec.ragged || spec.sequence_targets())
    throw UsageError("--eval.hflip mirrors images and clips with class labels; " + data + " holds " +
                     (spec.ragged ? "variable-length sequences" : "sequence targets"));
  if (spec.sample_shape.size() != 3 && spec.sample_shape.size() != 4)
    throw UsageError("--eval.hflip mirrors images [C,H,W] and clips [C,T,H,W]; " + data + " has samples of shape " +
                     io::shape_text(spec.sample_shape));
}

}  // namespace lockstep
