// bn_act_kernels (CUDA): see bn_act_kernels.hpp. Five kernels, each memory-bound:
//   moments       x -> per-(row block, channel) Welford moments        reads x once
//   finish_stats  moments -> stats, running estimates                  [C] work
//   values        x [, r] -> y = relu(x scale + shift [+ r])           reads x [r], writes y
//   grad_sums     dy, x [, y] -> per-(row block, channel) sum g, sum g (x - mean)
//   finish_grad   sums -> dweight, dbias, dx's coefficients
//   input_grad    dy, x [, y] -> dx [, dr = g]
// A thread owns one 16-byte vector of channels (8 bf16/fp16 or 4 float) and walks rows, so
// a warp reads contiguous 512-byte runs, and a channel's parameters sit in registers. Blocks
// are 256 threads: x over channel vectors (a power of two, up to 32), y over rows (a power of
// two, for the tree reductions). The ATen passes this replaces: batch_norm's statistics,
// its elementwise pass, the residual add and relu_ forward; threshold_backward and
// batch_norm's two backward passes — 13 to 16 passes over the activations, here 8 to 12.
#include <algorithm>
#include <atomic>

#include "core/model/bn_act_kernels.hpp"
#include "core/model/bn_act_math.hpp"
#include "core/model/kernel_vec.cuh"

namespace lockstep::bnact {
namespace {

using kernel::kVec;
using kernel::load_vec;
using kernel::store_vec;

constexpr int kThreads = 256;
constexpr int kLanes = 8;    // finish kernels: partials combined by 8 lanes per channel
constexpr int kFinishC = 32;  // finish kernels: channels per block

// The row-walk every pass shares: this thread's channel vector, first row and row step.
struct Walk {
  int64_t cv, row, step;
  bool active;
};
__device__ __forceinline__ Walk walk(int64_t cvecs) {
  const int64_t cv = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  return {cv, static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y,
          static_cast<int64_t>(gridDim.y) * blockDim.y, cv < cvecs};
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    moments_kernel(const T* __restrict__ x, int64_t rows, int64_t C, float* __restrict__ part_mean,
                   float* __restrict__ part_m2, float* __restrict__ part_n) {
  constexpr int V = kVec<T>;
  const Walk w = walk(C / V);
  float mean[V], m2[V], n = 0.0f;
#pragma unroll
  for (int k = 0; k < V; ++k) mean[k] = m2[k] = 0.0f;
  const auto add_row = [&](const float* v) {
    n += 1.0f;
    const float inv_n = 1.0f / n;
#pragma unroll
    for (int k = 0; k < V; ++k) add_value(mean[k], m2[k], v[k], inv_n);
  };
  if (w.active) {
    // Two rows' loads in flight per thread: this pass reads one stream only.
    int64_t r = w.row;
    for (; r + w.step < rows; r += 2 * w.step) {
      float a[V], b[V];
      load_vec(x + r * C + w.cv * V, a);
      load_vec(x + (r + w.step) * C + w.cv * V, b);
      add_row(a);
      add_row(b);
    }
    if (r < rows) {
      float a[V];
      load_vec(x + r * C + w.cv * V, a);
      add_row(a);
    }
  }
  // Tree over the block's rows: the upper half hands its moments to the lower half.
  extern __shared__ float sh[];
  constexpr int kStride = 2 * V + 1;
  for (unsigned s = blockDim.y / 2; s > 0; s >>= 1) {
    if (threadIdx.y >= s && threadIdx.y < 2 * s) {
      float* o = sh + ((threadIdx.y - s) * blockDim.x + threadIdx.x) * kStride;
#pragma unroll
      for (int k = 0; k < V; ++k) o[k] = mean[k], o[V + k] = m2[k];
      o[2 * V] = n;
    }
    __syncthreads();
    if (threadIdx.y < s) {
      const float* o = sh + (threadIdx.y * blockDim.x + threadIdx.x) * kStride;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const Moments m = combine({n, mean[k], m2[k]}, {o[2 * V], o[k], o[V + k]});
        mean[k] = m.mean, m2[k] = m.m2;
      }
      n += o[2 * V];
    }
    __syncthreads();
  }
  if (threadIdx.y == 0 && w.active) {
    float* pm = part_mean + static_cast<int64_t>(blockIdx.y) * C + w.cv * V;
    float* pq = part_m2 + static_cast<int64_t>(blockIdx.y) * C + w.cv * V;
#pragma unroll
    for (int k = 0; k < V; ++k) pm[k] = mean[k], pq[k] = m2[k];
    if (w.cv == 0) part_n[blockIdx.y] = n;
  }
}

// Block (kFinishC, kLanes): lane l of channel c combines partials l, l + kLanes, ...
__global__ void finish_stats_kernel(const float* __restrict__ part_mean, const float* __restrict__ part_m2,
                                    const float* __restrict__ part_n, int64_t parts, int64_t C,
                                    const float* __restrict__ weight, const float* __restrict__ bias, float eps,
                                    float momentum, float* running_mean, float* running_var, float* __restrict__ stats) {
  __shared__ float sh[kLanes][kFinishC][3];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kFinishC + threadIdx.x;
  Moments m{0.0f, 0.0f, 0.0f};
  if (c < C)
    for (int64_t p = threadIdx.y; p < parts; p += kLanes)
      m = combine(m, {part_n[p], part_mean[p * C + c], part_m2[p * C + c]});
  sh[threadIdx.y][threadIdx.x][0] = m.n, sh[threadIdx.y][threadIdx.x][1] = m.mean, sh[threadIdx.y][threadIdx.x][2] = m.m2;
  __syncthreads();
  if (threadIdx.y != 0 || c >= C) return;
  for (int l = 1; l < kLanes; ++l) m = combine(m, {sh[l][threadIdx.x][0], sh[l][threadIdx.x][1], sh[l][threadIdx.x][2]});
  const ChannelStats s = finish_stats(m, weight[c], bias[c], eps, momentum, running_mean ? running_mean + c : nullptr,
                                      running_var ? running_var + c : nullptr);
  stats[c] = s.mean, stats[C + c] = s.invstd, stats[2 * C + c] = s.scale, stats[3 * C + c] = s.shift;
}

template <typename T, bool kResidual>
__global__ void __launch_bounds__(kThreads)
    values_kernel(const T* __restrict__ x, const T* __restrict__ res, T* __restrict__ y, int64_t rows, int64_t C,
                  const float* __restrict__ stats) {
  constexpr int V = kVec<T>;
  const Walk w = walk(C / V);
  if (!w.active) return;
  ChannelStats s[V];
#pragma unroll
  for (int k = 0; k < V; ++k) s[k] = {0.0f, 0.0f, stats[2 * C + w.cv * V + k], stats[3 * C + w.cv * V + k]};
  for (int64_t r = w.row; r < rows; r += w.step) {
    const int64_t at = r * C + w.cv * V;
    float v[V], rv[V];
    load_vec(x + at, v);
    if (kResidual) load_vec(res + at, rv);
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] = relu(pre_act(v[k], s[k]) + (kResidual ? rv[k] : 0.0f));
    store_vec(y + at, v);
  }
}

// The ReLU's gradient: from the forward output with a residual, else from x recomputed.
template <typename T, bool kResidual>
__device__ __forceinline__ void masked_grads(const T* dy, const T* x, const T* y, int64_t at, const ChannelStats* s,
                                             float* g, float* xv) {
  constexpr int V = kVec<T>;
  float m[V];
  load_vec(dy + at, g);
  load_vec(x + at, xv);
  if (kResidual) load_vec(y + at, m);
#pragma unroll
  for (int k = 0; k < V; ++k) g[k] = relu_grad(g[k], kResidual ? m[k] : pre_act(xv[k], s[k]));
}

template <typename T, bool kResidual>
__global__ void __launch_bounds__(kThreads)
    grad_sums_kernel(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ y, int64_t rows,
                     int64_t C, const float* __restrict__ stats, float* __restrict__ part_g,
                     float* __restrict__ part_gx) {
  constexpr int V = kVec<T>;
  const Walk w = walk(C / V);
  float sg[V], sgx[V];
  ChannelStats s[V];
#pragma unroll
  for (int k = 0; k < V; ++k) sg[k] = sgx[k] = 0.0f, s[k] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (w.active) {
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int64_t c = w.cv * V + k;
      s[k] = {stats[c], stats[C + c], stats[2 * C + c], stats[3 * C + c]};
    }
    for (int64_t r = w.row; r < rows; r += w.step) {
      float g[V], xv[V];
      masked_grads<T, kResidual>(dy, x, y, r * C + w.cv * V, s, g, xv);
#pragma unroll
      for (int k = 0; k < V; ++k) sg[k] += g[k], sgx[k] = fmaf(g[k], xv[k] - s[k].mean, sgx[k]);
    }
  }
  extern __shared__ float sh[];
  constexpr int kStride = 2 * V + 1;
  for (unsigned h = blockDim.y / 2; h > 0; h >>= 1) {
    if (threadIdx.y >= h && threadIdx.y < 2 * h) {
      float* o = sh + ((threadIdx.y - h) * blockDim.x + threadIdx.x) * kStride;
#pragma unroll
      for (int k = 0; k < V; ++k) o[k] = sg[k], o[V + k] = sgx[k];
    }
    __syncthreads();
    if (threadIdx.y < h) {
      const float* o = sh + (threadIdx.y * blockDim.x + threadIdx.x) * kStride;
#pragma unroll
      for (int k = 0; k < V; ++k) sg[k] += o[k], sgx[k] += o[V + k];
    }
    __syncthreads();
  }
  if (threadIdx.y == 0 && w.active) {
    float* pg = part_g + static_cast<int64_t>(blockIdx.y) * C + w.cv * V;
    float* pgx = part_gx + static_cast<int64_t>(blockIdx.y) * C + w.cv * V;
#pragma unroll
    for (int k = 0; k < V; ++k) pg[k] = sg[k], pgx[k] = sgx[k];
  }
}

__global__ void finish_grad_kernel(const float* __restrict__ part_g, const float* __restrict__ part_gx, int64_t parts,
                                   int64_t C, float n, const float* __restrict__ weight,
                                   const float* __restrict__ stats, float* __restrict__ dweight,
                                   float* __restrict__ dbias, float* __restrict__ coeffs) {
  __shared__ float sh[kLanes][kFinishC][2];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kFinishC + threadIdx.x;
  float sg = 0.0f, sgx = 0.0f;
  if (c < C)
    for (int64_t p = threadIdx.y; p < parts; p += kLanes) sg += part_g[p * C + c], sgx += part_gx[p * C + c];
  sh[threadIdx.y][threadIdx.x][0] = sg, sh[threadIdx.y][threadIdx.x][1] = sgx;
  __syncthreads();
  if (threadIdx.y != 0 || c >= C) return;
  for (int l = 1; l < kLanes; ++l) sg += sh[l][threadIdx.x][0], sgx += sh[l][threadIdx.x][1];
  const ChannelStats s{stats[c], stats[C + c], stats[2 * C + c], stats[3 * C + c]};
  dbias[c] = sg;
  dweight[c] = sgx * s.invstd;
  const InputGradCoeffs k = input_grad_coeffs(s, weight[c], n, sg, sgx);
  coeffs[c] = k.a, coeffs[C + c] = k.b, coeffs[2 * C + c] = k.c;
}

template <typename T, bool kResidual>
__global__ void __launch_bounds__(kThreads)
    input_grad_kernel(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ y, int64_t rows,
                      int64_t C, const float* __restrict__ stats, const float* __restrict__ coeffs,
                      T* __restrict__ dx, T* __restrict__ dres) {
  constexpr int V = kVec<T>;
  const Walk w = walk(C / V);
  if (!w.active) return;
  ChannelStats s[V];
  InputGradCoeffs kc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const int64_t c = w.cv * V + k;
    s[k] = {stats[c], stats[C + c], stats[2 * C + c], stats[3 * C + c]};
    kc[k] = {coeffs[c], coeffs[C + c], coeffs[2 * C + c]};
  }
  for (int64_t r = w.row; r < rows; r += w.step) {
    const int64_t at = r * C + w.cv * V;
    float g[V], xv[V], out[V];
    masked_grads<T, kResidual>(dy, x, y, at, s, g, xv);
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = input_grad(kc[k], g[k], xv[k], s[k].mean);
    store_vec(dx + at, out);
    if (kResidual) store_vec(dres + at, g);
  }
}

// The multiprocessor count of each device, asked once for the first kCached device ids
// (the grids follow it), every time for any later one.
cudaError_t multiprocessors(int device, int* sms) {
  constexpr int kCached = 64;
  static std::atomic<int> cached[kCached] = {};
  if (device < 0) return cudaErrorInvalidDevice;
  if (device < kCached && (*sms = cached[device].load()) > 0) return cudaSuccess;
  const cudaError_t rc = cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, device);
  if (rc == cudaSuccess && device < kCached) cached[device] = *sms;
  return rc;
}

struct Grid {
  dim3 block, grid;
  size_t shared;  // the reductions' tree
};
Grid grid_for(int sms, int64_t rows, int64_t channels, int blocks_per_sm, int vec) {
  const int64_t cvecs = channels / vec;
  unsigned bx = 1;
  while (bx < cvecs && bx < 32) bx <<= 1;
  const unsigned by = kThreads / bx;
  const int64_t gx = (cvecs + bx - 1) / bx;
  const int64_t gy = std::max<int64_t>(
      1, std::min<int64_t>({(rows + by - 1) / by, std::max<int64_t>(1, sms * blocks_per_sm / gx), 65535}));
  return {dim3(bx, by), dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy)),
          sizeof(float) * (by / 2) * bx * (2 * vec + 1)};
}
constexpr int kReduceBlocksPerSm = 4, kValueBlocksPerSm = 8;
// The reductions' grid; its row blocks are the partials the workspace holds (cuda_work_floats).
Grid reduce_grid(int sms, int64_t rows, int64_t channels, int vec) {
  return grid_for(sms, rows, channels, kReduceBlocksPerSm, vec);
}
Grid values_grid(int sms, int64_t rows, int64_t channels, int vec) {
  return grid_for(sms, rows, channels, kValueBlocksPerSm, vec);
}

template <typename T>
cudaError_t forward_as(const ForwardArgs& a, int sms, cudaStream_t stream) {
  const int64_t C = a.channels;
  const Grid g = reduce_grid(sms, a.rows, C, kVec<T>);
  const int64_t parts = g.grid.y;
  float* part_mean = a.work;
  float* part_m2 = part_mean + parts * C;
  float* part_n = part_m2 + parts * C;
  const T* x = static_cast<const T*>(a.x);
  moments_kernel<T><<<g.grid, g.block, g.shared, stream>>>(x, a.rows, C, part_mean, part_m2, part_n);
  finish_stats_kernel<<<static_cast<unsigned>((C + kFinishC - 1) / kFinishC), dim3(kFinishC, kLanes), 0, stream>>>(
      part_mean, part_m2, part_n, parts, C, a.weight, a.bias, a.eps, a.momentum, a.running_mean, a.running_var,
      a.stats);
  const Grid v = values_grid(sms, a.rows, C, kVec<T>);
  if (a.residual != nullptr)
    values_kernel<T, true><<<v.grid, v.block, 0, stream>>>(x, static_cast<const T*>(a.residual),
                                                           static_cast<T*>(a.y), a.rows, C, a.stats);
  else
    values_kernel<T, false><<<v.grid, v.block, 0, stream>>>(x, nullptr, static_cast<T*>(a.y), a.rows, C, a.stats);
  return cudaGetLastError();
}

template <typename T, bool kResidual>
cudaError_t backward_as(const BackwardArgs& a, int sms, cudaStream_t stream) {
  const int64_t C = a.channels;
  const Grid g = reduce_grid(sms, a.rows, C, kVec<T>);
  const int64_t parts = g.grid.y;
  float* part_g = a.work;
  float* part_gx = part_g + parts * C;
  float* coeffs = part_gx + parts * C;
  const T* dy = static_cast<const T*>(a.dy);
  const T* x = static_cast<const T*>(a.x);
  const T* y = static_cast<const T*>(a.y);
  grad_sums_kernel<T, kResidual><<<g.grid, g.block, g.shared, stream>>>(dy, x, y, a.rows, C, a.stats, part_g, part_gx);
  finish_grad_kernel<<<static_cast<unsigned>((C + kFinishC - 1) / kFinishC), dim3(kFinishC, kLanes), 0, stream>>>(
      part_g, part_gx, parts, C, static_cast<float>(a.rows), a.weight, a.stats, a.dweight, a.dbias, coeffs);
  const Grid v = values_grid(sms, a.rows, C, kVec<T>);
  input_grad_kernel<T, kResidual><<<v.grid, v.block, 0, stream>>>(dy, x, y, a.rows, C, a.stats, coeffs,
                                                                  static_cast<T*>(a.dx), static_cast<T*>(a.dresidual));
  return cudaGetLastError();
}

template <typename T>
cudaError_t backward_as(const BackwardArgs& a, int sms, cudaStream_t stream) {
  return a.dresidual != nullptr ? backward_as<T, true>(a, sms, stream) : backward_as<T, false>(a, sms, stream);
}

}  // namespace

cudaError_t cuda_work_floats(Dtype dtype, int device, int64_t rows, int64_t channels, int64_t* floats) {
  int sms = 0;
  const cudaError_t rc = multiprocessors(device, &sms);
  if (rc != cudaSuccess) return rc;
  const int64_t parts = reduce_grid(sms, rows, channels, vector_width(dtype)).grid.y;
  // Forward: moments [parts][C] x 2 + counts [parts]; backward: sums [parts][C] x 2 + coefficients [3][C].
  *floats = 2 * parts * channels + std::max<int64_t>(parts, 3 * channels);
  return cudaSuccess;
}

cudaError_t cuda_forward(const ForwardArgs& a, int device, cudaStream_t stream) {
  int sms = 0;
  const cudaError_t rc = multiprocessors(device, &sms);
  if (rc != cudaSuccess) return rc;
  return kernel::with_element<float, __half, __nv_bfloat16>(
      a.dtype, [&](auto e) { return forward_as<typename decltype(e)::type>(a, sms, stream); });
}

cudaError_t cuda_backward(const BackwardArgs& a, int device, cudaStream_t stream) {
  int sms = 0;
  const cudaError_t rc = multiprocessors(device, &sms);
  if (rc != cudaSuccess) return rc;
  if ((a.dresidual != nullptr) != (a.y != nullptr)) return cudaErrorInvalidValue;
  return kernel::with_element<float, __half, __nv_bfloat16>(
      a.dtype, [&](auto e) { return backward_as<typename decltype(e)::type>(a, sms, stream); });
}

}  // namespace lockstep::bnact
