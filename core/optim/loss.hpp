// loss: the training loss, cross-entropy with optional class weights (--train.class-weights)
// and label smoothing (--train.label-smoothing).
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

}  // namespace lockstep
