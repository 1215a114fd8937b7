// max_pool_kernels: max-pooling over channels-innermost activations (NHWC / NDHWC) with the
// argmax kept as one byte per output value: the position inside its window. One argument
// block for both implementations: CPU loops (max_pool_host.cpp, always built) and CUDA
// kernels (max_pool_kernels.cu, built with the CUDA toolkit); max_pool.cpp wraps both as one
// autograd function.
//
// Semantics (ATen's max_pool*d with_indices, ceil_mode false, dilation 1):
// 1. output o along a dimension covers inputs [o s - p, o s - p + k) clipped to the input;
//    its window position r counts the UNCLIPPED window's positions in row-major order (so
//    r < kernel volume <= 256 fits a byte);
// 2. forward: the window's valid positions in row-major order; a value replaces the maximum
//    if it is greater or NaN (ties keep the first, a NaN wins and the last NaN stays), the
//    maximum starting at -inf at the first valid position — ATen's CPU rule (ATen's 2-d
//    CUDA kernel starts a window of -inf at input 0 instead); the maximum is written as
//    stored, bits and NaN payloads included;
// 3. backward: each input value gathers the gradients of the outputs whose argmax it is, in
//    the outputs' row-major order, summed in float32 and rounded once: ATen's float32
//    results bit for bit (its scatter on the CPU, its 2-d gather on CUDA, the same order);
//    in fp16/bf16 ATen's float32 result rounded once, where ATen's own 16-bit CPU backward
//    rounds each addition, and its 3-d CUDA backward adds atomically in no fixed order.
// What it saves over ATen (issue 32: max-pool's backward took 1.8 ms of ResNet-18's 20.7 ms
// bf16 step on an H100): the int64 indices, 8 bytes per output value written in forward and
// read in backward (ResNet-18's stem: 411 MB each way at batch 256), become 1 byte, and
// backward writes every input value once with no atomics and no zero-fill pass.
// No host synchronisation: the CUDA passes are kernels on the caller's stream.
#pragma once

#include <cstdint>

#include "core/model/kernel_dtype.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace lockstep::maxpool {

using kernel::Dtype;
using kernel::vector_width;

// Spatial sizes as 3 dimensions (D, H, W); a 2-d pool has D = 1, kernel 1, stride 1, pad 0.
struct Geometry {
  int64_t batch, channels;
  int64_t in[3], out[3], kernel[3], stride[3], pad[3];
};

struct ForwardArgs {
  Dtype dtype;
  Geometry g;
  const void* x;   // [batch, in..., channels]
  void* y;         // [batch, out..., channels]
  uint8_t* index;  // [batch, out..., channels]: window positions
};

struct BackwardArgs {
  Dtype dtype;
  Geometry g;
  const void* dy;        // [batch, out..., channels]
  const uint8_t* index;  // forward's
  void* dx;              // [batch, in..., channels]: every value written
};

void host_forward(const ForwardArgs& a);
void host_backward(const BackwardArgs& a);

#ifdef LOCKSTEP_HAVE_CUDA
// CUDA on STREAM. Errors are returned (the launches'), never thrown.
cudaError_t cuda_forward(const ForwardArgs& a, cudaStream_t stream);
cudaError_t cuda_backward(const BackwardArgs& a, cudaStream_t stream);
#endif

}  // namespace lockstep::maxpool
