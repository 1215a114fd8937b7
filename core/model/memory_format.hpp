// memory_format: the layout a conv net's weights and activations live in
// (--model.memory-format). Channels-last (NHWC; NDHWC for clips) is what oneDNN's CPU
// convolutions and cuDNN's tensor-core kernels run natively, and ATen's CPU max-pool and
// BatchNorm kernels are vectorised over channels in it. Measured on the CI VM's Xeon
// (AVX-512, one thread per rank, bench/memory_format.sh): the reference CNN trains 1.32x
// faster at 2 ranks, the video job's c3d 1.34x (profiled, the CNN's two max-pools took 11
// ms of a 46 ms NCHW step, 1.5 ms channels-last). The function is the same, only the
// strides differ: checkpoints and safetensors exports do not change; the gradient buckets
// hold each weight in its own memory order (every rank's layout the same: the trainer's
// preflight checks it).
#pragma once

#include "core/config/enums.hpp"
#include "core/model/registry.hpp"

namespace lockstep {

// Whether MODEL should run channels-last under F: contiguous never; channels-last for a
// conv net (UsageError for any other model, and on CPU for a model with a hazard below);
// auto for a conv net on CPU without such a hazard, and for every conv net on a GPU, in
// float32 too: cuDNN's convolutions run on tensor cores in bf16/fp16 and in float32 through
// TF32 (on by default for cuDNN convolutions), natively NHWC either way (issue 32: eager
// PyTorch with channels_last was 3.2x lockstep's NCHW step on an H100). When auto keeps a
// conv net contiguous because of a hazard, NOTE (if given) says why.
bool wants_channels_last(MemoryFormat f, const Net& model, const std::string& name, bool cuda,
                         std::string* note = nullptr);

// The first layer channels-last must not run through on CPU, described ("" when none): a
// 1x1 convolution with a stride above 1 and fewer than 16 input channels. oneDNN's NHWC
// 1x1 backward-weights kernel reduces such an input to unit stride in a workspace sized
// for its channel block and writes past it when there are fewer channels
// (uxlfoundation/oneDNN issue 6035). Measured with LibTorch 2.11 on the CI VM: 2-7 input
// channels corrupt the heap with one thread (double free) and hang or give wrong weight
// gradients with two; 8 and more pass; 16 covers AVX-512 builds' wider block. The forward
// pass and the input gradient are not affected, nor are cuDNN's kernels.
std::string channels_last_hazard(const Net& model);

// Gives MODEL's 4-D and 5-D parameters and buffers channels-last strides in place (the
// same tensor objects, new storage: call before training starts) and makes forward()
// convert its input. Returns how many tensors changed layout. "Channels-last strides" are
// what suggest_memory_format() reads as such (the kernels choose their layout by it), not
// what contiguous(ChannelsLast) leaves: for a one-channel tensor (a first conv's weight,
// a gray image batch) that keeps NCHW strides, and the whole net then ran NCHW.
int use_channels_last(Net& model);
// The reverse: MODEL's 4-D and 5-D parameters and buffers contiguous (NCHW / NCDHW) in place,
// forward() no longer converting. For weights read with a channels-last file's strides into
// a model that runs contiguous (a GPU run's checkpoint resumed on a CPU whose oneDNN must not
// run a layer channels-last: channels_last_hazard). Returns how many tensors changed layout.
int use_contiguous(Net& model);

}  // namespace lockstep
