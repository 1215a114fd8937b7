// mirror: test-time augmentation by horizontal mirroring (--eval.hflip). A model trained
// with random flips has learnt each image and its mirror; at evaluation the class
// probabilities of both are averaged, p = (softmax(f(x)) + softmax(f(flip_W(x)))) / 2, which
// costs a second forward pass and is a common +0.2-0.4 pp on Fashion-MNIST (docs/accuracy.md).
// Images [C,H,W] and clips [C,T,H,W] are mirrored along W (every frame of a clip alike);
// other samples are refused, as --data.hflip refuses them.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/registry.hpp"

namespace lockstep {

// Float32 scores of X [N, ...] whose softmax is the model's class probabilities: the
// model's logits, or with HFLIP the log of the averaged probabilities (so cross-entropy,
// argmax and softmax on the result mean the averaged prediction). LENGTHS as class_logits.
torch::Tensor eval_logits(Net& net, const torch::Tensor& x, const torch::Tensor& lengths, bool hflip);

// Throws UsageError naming DATA when HFLIP is set and samples of SHAPE are neither images
// nor clips.
void check_eval_hflip(bool hflip, const std::vector<int64_t>& shape, const std::string& data);

}  // namespace lockstep
