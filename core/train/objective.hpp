// objective: what one micro-batch is scored by, per dataset kind: cross-entropy on class
// labels (the Loss of core/optim, with its weights and smoothing; counts correct
// predictions), or CTC on sequence targets (per-frame logits of a sequence model, blank =
// the token count; no accuracy). The trainer calls it inside its autocast scope.
#pragma once

#include <torch/types.h>

#include <cstdint>

#include "core/data/batch_maker.hpp"
#include "core/model/registry.hpp"
#include "core/optim/loss.hpp"

namespace lockstep {

struct Scored {
  torch::Tensor loss;     // scalar, with grad
  torch::Tensor correct;  // int64 scalar on the device: correct predictions (0 for CTC)
  int64_t unaligned = 0;  // CTC: samples no alignment exists for (loss.hpp's unalignable)
};

class Objective {
 public:
  Objective(const io::DatasetSpec& spec, const Loss& loss)
      : sequence_(spec.sequence_targets()), blank_(static_cast<int64_t>(spec.tokens.size())), loss_(loss) {}
  bool sequence() const { return sequence_; }
  // X: the batch's inputs (BatchMaker::inputs); RECORDS: its N label records; Y: their
  // class labels on the device where the caller has them (BatchFeed), else undefined.
  Scored operator()(Net& model, const BatchMaker& maker, const torch::Tensor& x, const int64_t* records,
                    int64_t n, const torch::Tensor& y = torch::Tensor()) const;
  // Class labels only: X scored against the labels Y (on the device; LENGTHS for ragged
  // series, else undefined). What a step with static buffers calls (static_step.hpp).
  Scored classes(Net& model, const torch::Tensor& x, const torch::Tensor& y,
                 const torch::Tensor& lengths = torch::Tensor()) const;

 private:
  bool sequence_;
  int64_t blank_;
  const Loss& loss_;
};

}  // namespace lockstep
