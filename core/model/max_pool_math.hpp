// max_pool_math: the index arithmetic of max_pool_kernels.hpp, written once for its CPU loops
// (max_pool_host.cpp) and its CUDA kernels (max_pool_kernels.cu), so that a CPU test of the
// window and gather rules tests the GPU's too.
#pragma once

#include <cstdint>

#include "core/model/max_pool_kernels.hpp"

#ifdef __CUDACC__
#define LOCKSTEP_MP_HD __host__ __device__ __forceinline__
#else
#define LOCKSTEP_MP_HD inline
#endif

namespace lockstep::maxpool {

// Index arithmetic in I: int64_t on the CPU; int on the GPU, where a 64-bit division costs
// tens of instructions per value (max_pool_obstacle keeps every size within int's range).
// Along one dimension: the inputs [begin, end) output O covers, and where its unclipped
// window starts.
template <typename I>
struct Span {
  I begin, end, start;
};
template <typename I>
LOCKSTEP_MP_HD Span<I> window(I o, I k, I s, I p, I in) {
  const I start = o * s - p;
  return {start < 0 ? 0 : start, start + k < in ? start + k : in, start};
}

// Along one dimension: the outputs [begin, end) whose windows cover input I.
template <typename I>
struct Range {
  I begin, end;
};
template <typename I>
LOCKSTEP_MP_HD Range<I> covering(I i, I k, I s, I p, I out) {
  const I hi = (i + p) / s + 1;  // o s - p <= i
  const I lo = i + p < k ? 0 : (i + p - k) / s + 1;  // o s - p + k > i
  return {lo, hi < out ? hi : out};
}

// The window position of offsets (DD, DH, DW) from a window's unclipped start.
template <typename I>
LOCKSTEP_MP_HD I position(const I* kernel, I dd, I dh, I dw) {
  return (dd * kernel[1] + dh) * kernel[2] + dw;
}

// Whether V replaces the running maximum BEST (rule 2 of max_pool_kernels.hpp): greater, or
// NaN (the one value unequal to itself; no fast-math here, which could fold that away).
LOCKSTEP_MP_HD bool replaces(float v, float best) { return v > best || v != v; }

// Row-major offset of position (d, h, w) of sample n in a [N, D, H, W, C] tensor of spatial
// SIZE, in units of C (64-bit: the tensor may exceed int's range).
template <typename I>
LOCKSTEP_MP_HD int64_t site(const I* size, int64_t n, int64_t d, int64_t h, int64_t w) {
  return ((n * size[0] + d) * size[1] + h) * size[2] + w;
}

}  // namespace lockstep::maxpool
