// kernel_vec: the 16-byte loads and stores lockstep's CUDA kernels share (bn_act_kernels.cu,
// max_pool_kernels.cu): kVec<T> values of T converted to and from float, or moved as they are. Pointers must be
// 16-byte aligned (each op's obstacle check, and its wrapper for incoming gradients).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace lockstep::kernel {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T>
constexpr int kVec = 16 / static_cast<int>(sizeof(T));

template <typename T>
__device__ __forceinline__ void load_vec(const T* p, float* out) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int k = 0; k < kVec<T>; ++k) out[k] = to_float(e[k]);
}
template <typename T>
__device__ __forceinline__ void store_vec(T* p, const float* in) {
  uint4 raw;
  T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
  for (int k = 0; k < kVec<T>; ++k) e[k] = from_float<T>(in[k]);
  *reinterpret_cast<uint4*>(p) = raw;
}

// kVec<T> values as they are in memory, without conversion (NaN payloads kept).
template <typename T>
__device__ __forceinline__ void load_raw(const T* p, T* out) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int k = 0; k < kVec<T>; ++k) out[k] = e[k];
}
template <typename T>
__device__ __forceinline__ void store_raw(T* p, const T* in) {
  uint4 raw;
  T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
  for (int k = 0; k < kVec<T>; ++k) e[k] = in[k];
  *reinterpret_cast<uint4*>(p) = raw;
}

}  // namespace lockstep::kernel
