// flop_count: a model's forward FLOPs per sample, counted from the autograd graph of one
// forward pass, and the GPU's peak for model FLOPs utilisation (MFU).
//
// 1. One sample of the dataset's shape (zeros) goes forward in eval mode (no BatchNorm
//    statistics updated, no dropout draw) with every parameter and the input requiring
//    grad, so that every layer leaves a node; the model is left as it was.
// 2. Counted, as 2 x multiply-adds, the MFU convention (PyTorch's FlopCounterMode counts
//    the same): convolutions of any dimension and groups (output elements x input channels
//    per group x kernel size), linear layers and matrix products (addmm, mm, bmm, baddbmm).
//    Shapes are read from the graph's edges: a node's input metadata is its output's shape,
//    and the next node's is the shape of the tensor it received (a transposed convolution:
//    input elements x output channels per group x kernel size). Elementwise work,
//    normalisation and pooling are not counted. Work that runs as one fused node whose FLOPs
//    the graph does not show (cuDNN's RNNs, fused attention) is named in `unseen`: the
//    caller gives no MFU for such a model.
// 3. A training step is 3x the forward (the backward: 2x), per sample.
// 4. Peak: the data-sheet dense tensor-core peak of the GPU (by name) for the step's math —
//    bf16/fp16 under --amp, TF32 for float32 (cuDNN's default for convolutions) — or none
//    for a GPU not in the table and on CPUs.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "core/model/registry.hpp"

namespace lockstep {

struct FlopCount {
  double forward_per_sample = 0;  // FLOPs
  int64_t layers = 0;             // convolutions and matrix products counted
  std::string unseen;             // heavy work the graph hides (a fused RNN, fused attention), "" if none
  double train_per_sample() const { return 3.0 * forward_per_sample; }
};

// Never throws: a model that cannot go forward on a zero sample counts nothing.
FlopCount count_forward_flops(Net& model, const io::DatasetSpec& spec, torch::Device device);

// FLOP/s of GPU NAME (cudaDeviceProp::name) for half-precision math (HALF) or float32 via
// TF32; none when the GPU is not in the table.
std::optional<double> gpu_peak_flops(const std::string& name, bool half);

}  // namespace lockstep
