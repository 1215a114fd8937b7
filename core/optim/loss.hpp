// loss: the training loss, cross-entropy with optional class weights (--train.class-weights)
// and label smoothing (--train.label-smoothing); CTC for sequence targets.
//
// Class weights "auto" are inverse class frequency over the training split's histogram
// (manifest.json), normalised so a balanced dataset gets weight 1 for every class:
// w_c = total / (classes * n_c); a class with no training samples gets 0.
#pragma once

#include <torch/types.h>

#include <string>
#include <vector>

namespace lockstep {

// SPEC: "none" (empty result), "auto", or a comma-separated list of CLASSES non-negative
// numbers. Throws UsageError naming --train.class-weights.
std::vector<double> class_weights(const std::string& spec, const std::vector<int64_t>& histogram);
// Class, training samples, share and weight, one line each, for the startup log.
std::string class_weight_table(const std::vector<double>& weights, const std::vector<int64_t>& histogram,
                               const std::vector<std::string>& names);

class Loss {
 public:
  Loss(std::vector<double> weights, double label_smoothing, torch::Device device);
  torch::Tensor operator()(const torch::Tensor& logits, const torch::Tensor& labels) const;

 private:
  torch::Tensor weight_;  // undefined: unweighted
  double smoothing_;
};

// Connectionist temporal classification (Graves et al. 2006) over per-frame logits
// [N, T, tokens + 1] with the blank last: torch::ctc_loss, each sample's loss divided by
// its target length, then the batch mean (PyTorch's 'mean'); an impossible alignment
// (fewer frames than the target needs) counts 0, not inf (zero_infinity).
torch::Tensor ctc_loss_mean(const torch::Tensor& logits, const torch::Tensor& out_lengths, const torch::Tensor& targets,
                            const torch::Tensor& target_lengths, int64_t blank);
// Each sample's CTC loss divided by its target length ([N], what ctc_loss_mean averages),
// 0 where no alignment exists.
torch::Tensor ctc_loss_each(const torch::Tensor& logits, const torch::Tensor& out_lengths, const torch::Tensor& targets,
                            const torch::Tensor& target_lengths, int64_t blank);
// Samples of a batch no CTC alignment exists for: fewer output frames OUT_LENGTHS than their
// target NEEDS (SequenceTargets::needed), both CPU int64 [N]. They count 0 in the loss and
// train nothing: the trainer and the evaluator count them and say so (a set of them trained
// to a loss of exactly 0 and stopped at --train.stop-at val_loss<=0.01, silently).
torch::Tensor unalignable(const torch::Tensor& out_lengths, const torch::Tensor& needed);

}  // namespace lockstep
