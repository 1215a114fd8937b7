// objective: see objective.hpp.
#include "core/train/objective.hpp"

#include <torch/torch.h>

namespace lockstep {

Scored Objective::operator()(Net& model, const BatchMaker& maker, const torch::Tensor& x, const int64_t* records,
                             int64_t n, const torch::Tensor& y) const {
  Scored s;
  if (sequence_) {
    const SequenceTargets t = maker.targets(records, n);
    torch::Tensor out_lengths;
    const torch::Tensor logits = model.forward_sequence(x, t.lengths, &out_lengths);
    s.loss = ctc_loss_mean(logits, out_lengths, t.targets, t.target_lengths, blank_);
    s.unaligned = unalignable(out_lengths, t.needed).sum().item<int64_t>();  // host tensors: no device sync
    s.correct = torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(s.loss.device()));
    return s;
  }
  return classes(model, x, y.defined() ? y : maker.labels(records, n), maker.ragged_lengths(records, n));
}

Scored Objective::classes(Net& model, const torch::Tensor& x, const torch::Tensor& y,
                          const torch::Tensor& lengths) const {
  Scored s;
  const torch::Tensor logits = class_logits(model, x, lengths);
  s.loss = loss_(logits, y);
  s.correct = logits.detach().argmax(1).eq(y).sum();
  return s;
}

}  // namespace lockstep
