// mirror: test-time augmentation by horizontal mirroring (--eval.hflip). A model trained
// with random flips has learnt each image and its mirror; at evaluation the class
// probabilities of both are averaged, p = (softmax(f(x)) + softmax(f(flip_W(x)))) / 2: one
// forward pass over the batch and its mirror together (twice the batch; BatchNorm is in
// eval mode, so each half's output is what it would be alone). On the ResNet job it is
// +0.10 to +0.25 pp of test accuracy (docs/accuracy.md). Images [C,H,W] and clips
// [C,T,H,W] are mirrored along W (every frame of a clip alike); other samples, and ragged
// or sequence-target data, are refused, as --data.hflip refuses them.
#pragma once

#include <torch/types.h>

#include <string>

#include "io/dataset/shard_format.hpp"

namespace lockstep {

class Net;

// Float32 scores of X [N, ...] whose softmax is the model's class probabilities: the
// model's logits, or with HFLIP the log of the averaged probabilities (so cross-entropy,
// argmax and softmax on the result mean the averaged prediction). LENGTHS as class_logits.
torch::Tensor eval_logits(Net& net, const torch::Tensor& x, const torch::Tensor& lengths, bool hflip);

// Throws UsageError naming DATA when HFLIP is set and SPEC's samples are not fixed-size
// images or clips with class labels.
void check_eval_hflip(bool hflip, const io::DatasetSpec& spec, const std::string& data);
// "with --eval.hflip" | "without --eval.hflip": for the warnings that scores made in one
// mode do not compare with the other's.
inline const char* hflip_mode(bool hflip) { return hflip ? "with --eval.hflip" : "without --eval.hflip"; }

}  // namespace lockstep
