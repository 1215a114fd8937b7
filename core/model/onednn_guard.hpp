// onednn_guard: where lockstep keeps oneDNN (mkldnn) off because its result is wrong.
//
// PyTorch 2.11's oneDNN bfloat16 3-d convolution gives wrong weight gradients on CPUs with
// native bf16 instructions (its avx512_core_bf16 kernels): inf, NaN or values ~1e35 off
// float32's at small spatial sizes, e.g. a 2x2x2 input under a 3x3x3 kernel with padding 1 —
// the deepest layers of r3d and c3d on short or small clips. Measured on an AMD EPYC VM
// (2026-11-28) in plain PyTorch (36 of 144 conv3d shapes wrong, every one with a 2x2x2
// input); ATen's own kernels (oneDNN off) are right on all 144; float16, 2-d convolutions
// and float32 are right. So a CPU run under bf16 autocast with a 3-d convolution trains with
// oneDNN off (slower, correct), with one note. GPUs (cuDNN) are not affected.
#pragma once

#include <torch/nn/module.h>

#include <string>

#include "core/config/enums.hpp"

namespace lockstep {

// Why MODEL on DEVICE under AMP must run without oneDNN ("" when it need not).
std::string onednn_obstacle(const torch::nn::Module& model, const torch::Device& device, Amp amp);

// Turns oneDNN off for this process where onednn_obstacle says so; returns the reason ("" when
// nothing changed).
std::string keep_onednn_off_where_wrong(const torch::nn::Module& model, const torch::Device& device, Amp amp);

}  // namespace lockstep
