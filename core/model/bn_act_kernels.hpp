// bn_act_kernels: the fused BatchNorm (+ residual) + ReLU's passes over raw memory, with
// one argument block for both implementations: CPU loops (bn_act_host.cpp, always built)
// and CUDA kernels (bn_act_kernels.cu, built with the CUDA toolkit). The arithmetic is
// bn_act_math.hpp's; bn_act.cpp wraps both as one autograd function.
//
// Layout: ROWS x CHANNELS, channels innermost (NHWC / NDHWC / [N, C]), every tensor dense;
// float32 statistics and parameters; values in the element type.
// 1. forward: per-channel moments in partial sums over row blocks (work), combined into
//    STATS (mean, invstd, scale, shift per channel) and the running estimates updated;
//    then y = relu(x scale + shift [+ residual]).
// 2. backward: per-channel sums of g and g (x - mean) in partials, combined into dweight,
//    dbias and the input gradient's coefficients (work); then dx [and dresidual = g].
// No host synchronisation: the CUDA passes are kernels on the caller's stream, safe to
// capture in a CUDA graph; WORK is scratch owned by the caller, sized by *_work_floats.
#pragma once

#include <cstdint>

#include "core/model/kernel_dtype.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace lockstep::bnact {

// CHANNELS must be a multiple of vector_width (bn_act_obstacle).
using kernel::Dtype;
using kernel::vector_width;

struct ForwardArgs {
  Dtype dtype;
  int64_t rows, channels;
  const void* x;
  const void* residual;  // null: no residual
  void* y;
  const float* weight;
  const float* bias;
  float* running_mean;  // null: not tracked (running_var too)
  float* running_var;
  float momentum, eps;
  float* stats;  // out: [4][channels] mean, invstd, scale, shift
  float* work;
};

struct BackwardArgs {
  Dtype dtype;
  int64_t rows, channels;
  const void* dy;
  const void* x;
  const void* y;  // the forward output, for the ReLU's mask with a residual; null: from x
  const float* weight;
  const float* stats;  // forward's
  void* dx;
  void* dresidual;  // null: no residual
  float* dweight;   // [channels]
  float* dbias;     // [channels]
  float* work;
};

// CPU (bn_act_host.cpp): partial sums over a fixed number of row blocks, so results do not
// depend on the thread count.
int64_t host_work_floats(int64_t rows, int64_t channels);
void host_forward(const ForwardArgs& a);
void host_backward(const BackwardArgs& a);

#ifdef LOCKSTEP_HAVE_CUDA
// CUDA (bn_act_kernels.cu) on DEVICE's STREAM: the row blocks follow its multiprocessor count.
// Errors are returned (the launches'), never thrown: the caller checks them with file:line.
cudaError_t cuda_work_floats(Dtype dtype, int device, int64_t rows, int64_t channels, int64_t* floats);
cudaError_t cuda_forward(const ForwardArgs& a, int device, cudaStream_t stream);
cudaError_t cuda_backward(const BackwardArgs& a, int device, cudaStream_t stream);
#endif

}  // namespace lockstep::bnact
