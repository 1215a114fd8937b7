// bn_act: BatchNorm in training mode, an optional residual added, then ReLU, as one autograd
// node (--model.fused-bn): relu(batch_norm(x) [+ residual]), with the running estimates
// updated as torch does (momentum, unbiased variance). The passes are bn_act_kernels.hpp's:
// CUDA kernels on a GPU, the same steps as CPU loops on the CPU. What it saves over ATen's
// batch_norm + add + relu_ (issue 32: on an H100 those were ~8 ms of ResNet-18's 20.7 ms
// bf16 step, and the fusion torch.compile does there): backward needs no threshold_backward
// pass, and forward no relu_ pass, no add pass — 8 to 12 passes over the activations
// instead of 13 to 16.
//
// Values: not bit for bit ATen's (x scale + shift instead of (x - mean) invstd w + b, and the
// partial sums in another order): within float rounding of it (tests/unit/model/test_bn_act,
// and on a GPU tests/gpu/test_bn_act_gpu.cpp).
#pragma once

#include <string>

#include <ATen/core/Tensor.h>

namespace lockstep {

struct BnActInputs {
  at::Tensor x;         // [N, C], [N, C, H, W] channels-last, or [N, C, D, H, W] channels-last
  at::Tensor residual;  // undefined: none; else x's sizes, dtype and layout
  at::Tensor weight, bias, running_mean, running_var;  // float32 [C]
  double momentum = 0.1, eps = 1e-5;
};

// Why bn_act cannot take IN ("" when it can): the layout (channels innermost and dense), the
// dtype (float32, float16, bfloat16; float32 parameters), C a multiple of the 16-byte vector
// (4 or 8), at least 2 values per channel, 16-byte aligned data, a CPU or (built with CUDA)
// a CUDA device.
std::string bn_act_obstacle(const BnActInputs& in);

// relu(batch_norm(x, training=true) [+ residual]); differentiable in x, weight, bias and
// residual. Throws Error where bn_act_obstacle is not empty.
at::Tensor bn_act(const BnActInputs& in);

}  // namespace lockstep
