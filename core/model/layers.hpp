// layers: building blocks the built-in model families share.
#pragma once

#include <torch/nn/modules/conv.h>

#include <cstdint>
#include <string>
#include <utility>

#include "io/dataset/shard_format.hpp"

namespace lockstep {

class BatchNormImpl;
class MaxPoolImpl;

// KxK convolution, padding K/2, no bias (a BatchNorm follows).
torch::nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride = 1);
// 3-D convolution, kernel K (T x H x W), padding K/2, no bias (a BatchNorm follows).
torch::nn::Conv3d conv3d(int64_t in, int64_t out, torch::ExpandingArray<3> k, torch::ExpandingArray<3> stride = 1);
// ReLU then max-pool, computed in the cheaper order: pool first, ReLU on the pooled
// tensor (1/k^d of the elements, forward and backward). The same values and gradients:
// ReLU is monotone, so it commutes with max, and both orders send a window's gradient to
// the same element (or none: a window whose maximum is <= 0 gets zero either way).
// The reference CNN's step is ~10% faster for it (docs/accuracy.md).
torch::Tensor relu_max_pool(const torch::Tensor& x, MaxPoolImpl& pool);
// BN's output, ReLU, then max-pool: BN and ReLU as one fused node where BN fuses
// (sync_bn.hpp), else BN, then relu_max_pool's cheaper order. The same values either way.
torch::Tensor bn_relu_max_pool(BatchNormImpl& bn, const torch::Tensor& x, MaxPoolImpl& pool);
// Throws UsageError naming MODEL unless SPEC's samples are clips [C,T,H,W] with T >=
// MIN_T and H,W >= MIN_SIDE.
void require_clip(const std::string& model, const io::DatasetSpec& spec, int64_t min_t, int64_t min_side);
// Throws UsageError naming MODEL unless SPEC's samples are images [C,H,W] with H,W >= MIN_SIDE.
void require_image(const std::string& model, const io::DatasetSpec& spec, int64_t min_side);
// Time-series samples [C,L] or [L] with L >= 2: returns (C, or 0 for [L]; L), else throws
// UsageError naming the model and the dataset's shape.
std::pair<int64_t, int64_t> require_series(const std::string& model, const io::DatasetSpec& spec);

}  // namespace lockstep
