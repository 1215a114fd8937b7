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
// numbers. Throws UsageError naming --train.class-weights, also when no class that has
// training samples weighs more than 0 (mean_class_weight).
std::vector<double> class_weights(const std::string& spec, const std::vector<int64_t>& histogram);
// Class, training samples, share and weight, one line each, for the startup log.
std::string class_weight_table(const std::vector<double>& weights, const std::vector<int64_t>& histogram,
                               const std::vector<std::string>& names);

// The weighted loss of a batch is sum_i w_{y_i} loss_i / (batch * mean_weight), where
// MEAN_WEIGHT is the weights' mean over the training split (sum_c w_c n_c / sum_c n_c; for
// "auto", the share of classes that have samples): a sum of per-sample terms over a
// constant, so the mean over micro-batches (--dist.grad-accum) and ranks is the same sum over
// the global batch, however it is split.
// PyTorch's weighted 'mean' divides by the batch's own weight sum instead, which made the
// update depend on the split (helper-42: 10% apart between one batch of 12 and two of 6
// accumulated, 28% between 1 rank and 2): its mean over splits is not the global batch's.
// An all-zero-weight batch is 0 without smoothing (it trains nothing, and counts in the mean
// as such); with smoothing its smoothing terms count, as every other batch's do.
class Loss {
 public:
  Loss(std::vector<double> weights, double mean_weight, double label_smoothing, torch::Device device);
  torch::Tensor operator()(const torch::Tensor& logits, const torch::Tensor& labels) const;

 private:
  torch::Tensor weight_;  // undefined: unweighted
  double mean_weight_ = 1;
  double smoothing_;
};

// The mean of WEIGHTS over the samples of HISTOGRAM (what Loss divides by); throws
// UsageError naming --train.class-weights when every class that has samples weighs 0.
double mean_class_weight(const std::vector<double>& weights, const std::vector<int64_t>& histogram);

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
