// layers: building blocks the built-in model families share.
#pragma once

#include <torch/nn/modules/conv.h>

#include <cstdint>
#include <string>
#include <utility>

#include "io/dataset/shard_format.hpp"

namespace lockstep {

// KxK convolution, padding K/2, no bias (a BatchNorm follows).
torch::nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride = 1);
// 3-D convolution, kernel K (T x H x W), padding K/2, no bias (a BatchNorm follows).
torch::nn::Conv3d conv3d(int64_t in, int64_t out, torch::ExpandingArray<3> k, torch::ExpandingArray<3> stride = 1);
// Throws UsageError naming MODEL unless SPEC's samples are clips [C,T,H,W] with T >=
// MIN_T and H,W >= MIN_SIDE.
void require_clip(const std::string& model, const io::DatasetSpec& spec, int64_t min_t, int64_t min_side);
// Throws UsageError naming MODEL unless SPEC's samples are images [C,H,W] with H,W >= MIN_SIDE.
void require_image(const std::string& model, const io::DatasetSpec& spec, int64_t min_side);
// Time-series samples [C,L] or [L] with L >= 2: returns (C, or 0 for [L]; L), else throws
// UsageError naming the model and the dataset's shape.
std::pair<int64_t, int64_t> require_series(const std::string& model, const io::DatasetSpec& spec);

}  // namespace lockstep
