// mirror: see mirror.hpp.
#include "core/eval/mirror.hpp"

#include <torch/torch.h>

#include <cmath>

#include "core/base/error.hpp"
#include "io/dataset/shard_format.hpp"

namespace lockstep {

torch::Tensor eval_logits(Net& net, const torch::Tensor& x, const torch::Tensor& lengths, bool hflip) {
  const torch::Tensor logits = class_logits(net, x, lengths).to(torch::kFloat);
  if (!hflip) return logits;
  LOCKSTEP_REQUIRE(!lengths.defined() && (x.dim() == 4 || x.dim() == 5),
                   "--eval.hflip needs [N, C, H, W] or [N, C, T, H, W] batches, got " + std::to_string(x.dim()) + "-d");
  const torch::Tensor mirrored = class_logits(net, x.flip({-1}), lengths).to(torch::kFloat);
  // log((e^a + e^b) / 2) of the two log-softmaxes: stable, and its softmax is the average.
  return torch::logaddexp(torch::log_softmax(logits, 1), torch::log_softmax(mirrored, 1)) - std::log(2.0);
}

void check_eval_hflip(bool hflip, const std::vector<int64_t>& shape, const std::string& data) {
  if (hflip && shape.size() != 3 && shape.size() != 4)
    throw UsageError("--eval.hflip mirrors images [C,H,W] and clips [C,T,H,W]; " + data + " has samples of shape " +
                     io::shape_text(shape));
}

}  // namespace lockstep
