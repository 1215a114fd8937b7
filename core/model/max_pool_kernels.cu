// max_pool_kernels (CUDA): see max_pool_kernels.hpp. Two kernels, each memory-bound:
//   forward   x -> y, window positions      reads each window, writes y and 1 byte per value
//   backward  dy, positions -> dx           each input value gathers from the outputs covering it
// A thread owns one 16-byte vector of channels (8 bf16/fp16 or 4 float) at one site, so a
// warp reads contiguous runs of channels. The grid: x over (W, channel vectors) of one row, y
// over H, z over (N, D) in a loop; the index arithmetic in int (32-bit divisions), the
// memory offsets in 64 bits.
#include <algorithm>
#include <cstdint>

#include "core/model/kernel_vec.cuh"
#include "core/model/max_pool_kernels.hpp"
#include "core/model/max_pool_math.hpp"

namespace lockstep::maxpool {
namespace {

using kernel::kVec;
using kernel::from_float;
using kernel::load_raw;
using kernel::load_vec;
using kernel::store_raw;
using kernel::store_vec;
using kernel::to_float;

constexpr int kThreads = 256;
constexpr int64_t kMaxGridZ = 65535;

// V window positions, one byte each (byte k: lane k's), moved as one aligned word of V bytes
// (the index offsets are multiples of V).
template <int V>
struct Positions {
  static_assert(V == 4 || V == 8);
  uint64_t bits = 0;
  __device__ __forceinline__ unsigned at(int k) const { return static_cast<unsigned>(bits >> (8 * k)) & 0xffu; }
  __device__ __forceinline__ void set(int k, unsigned r) {
    bits = (bits & ~(uint64_t{0xff} << (8 * k))) | (static_cast<uint64_t>(r) << (8 * k));
  }
  __device__ __forceinline__ void load(const uint8_t* p) {
    if constexpr (V == 8) bits = *reinterpret_cast<const unsigned long long*>(p);
    else bits = *reinterpret_cast<const uint32_t*>(p);
  }
  __device__ __forceinline__ void store(uint8_t* p) const {
    if constexpr (V == 8) *reinterpret_cast<unsigned long long*>(p) = bits;
    else *reinterpret_cast<uint32_t*>(p) = static_cast<uint32_t>(bits);
  }
};

// Geometry in int (max_pool_obstacle keeps every size and product of sizes below 2^31):
// the index arithmetic's divisions are 32-bit.
struct Dims {
  int batch, channels;
  int in[3], out[3], kernel[3], stride[3], pad[3];
};
Dims narrow(const Geometry& g) {
  Dims d{static_cast<int>(g.batch), static_cast<int>(g.channels), {}, {}, {}, {}, {}};
  for (int i = 0; i < 3; ++i) {
    d.in[i] = static_cast<int>(g.in[i]), d.out[i] = static_cast<int>(g.out[i]);
    d.kernel[i] = static_cast<int>(g.kernel[i]), d.stride[i] = static_cast<int>(g.stride[i]);
    d.pad[i] = static_cast<int>(g.pad[i]);
  }
  return d;
}

// This thread's place in its row of WIDTH sites x CVECS channel vectors (grid x).
struct Lane {
  int w, cv;
  bool active;
};
__device__ __forceinline__ Lane lane_of(int width, int cvecs) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x, w = t / static_cast<unsigned>(cvecs);
  return {static_cast<int>(w), static_cast<int>(t % static_cast<unsigned>(cvecs)), w < static_cast<unsigned>(width)};
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(const T* __restrict__ x, T* __restrict__ y, uint8_t* __restrict__ index, Dims g) {
  constexpr int V = kVec<T>;
  const int C = g.channels;
  const Lane at = lane_of(g.out[2], C / V);
  if (!at.active) return;
  const int oh = static_cast<int>(blockIdx.y);
  const auto sh = window(oh, g.kernel[1], g.stride[1], g.pad[1], g.in[1]);
  const auto sw = window(at.w, g.kernel[2], g.stride[2], g.pad[2], g.in[2]);
  // Unsigned: batch x D < 2^31 (max_pool_obstacle), so z + gridDim.z cannot wrap.
  for (unsigned z = blockIdx.z; z < static_cast<unsigned>(g.batch * g.out[0]); z += gridDim.z) {
    const int n = static_cast<int>(z / g.out[0]), od = static_cast<int>(z % g.out[0]);
    const auto sd = window(od, g.kernel[0], g.stride[0], g.pad[0], g.in[0]);
    // The maximum as float (compared) and as stored (written back: NaN payloads kept).
    float best[V];
    T kept[V];
    Positions<V> arg;
    const auto first =
        static_cast<unsigned>(position(g.kernel, sd.begin - sd.start, sh.begin - sh.start, sw.begin - sw.start));
#pragma unroll
    for (int k = 0; k < V; ++k) best[k] = -INFINITY, kept[k] = from_float<T>(-INFINITY), arg.set(k, first);
    for (int d = sd.begin; d < sd.end; ++d)
      for (int h = sh.begin; h < sh.end; ++h)
        for (int w = sw.begin; w < sw.end; ++w) {
          const auto r = static_cast<unsigned>(position(g.kernel, d - sd.start, h - sh.start, w - sw.start));
          T e[V];
          load_raw(x + site(g.in, n, d, h, w) * C + at.cv * V, e);
#pragma unroll
          for (int k = 0; k < V; ++k) {
            const float v = to_float(e[k]);
            if (replaces(v, best[k])) best[k] = v, kept[k] = e[k], arg.set(k, r);
          }
        }
    const int64_t o = site(g.out, n, od, oh, at.w) * C + at.cv * V;
    store_raw(y + o, kept);
    arg.store(index + o);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    backward_kernel(const T* __restrict__ dy, const uint8_t* __restrict__ index, T* __restrict__ dx, Dims g) {
  constexpr int V = kVec<T>;
  const int C = g.channels;
  const Lane at = lane_of(g.in[2], C / V);
  if (!at.active) return;
  const int h = static_cast<int>(blockIdx.y);
  const auto rh = covering(h, g.kernel[1], g.stride[1], g.pad[1], g.out[1]);
  const auto rw = covering(at.w, g.kernel[2], g.stride[2], g.pad[2], g.out[2]);
  for (unsigned z = blockIdx.z; z < static_cast<unsigned>(g.batch * g.in[0]); z += gridDim.z) {
    const int n = static_cast<int>(z / g.in[0]), d = static_cast<int>(z % g.in[0]);
    const auto rd = covering(d, g.kernel[0], g.stride[0], g.pad[0], g.out[0]);
    float sum[V];
#pragma unroll
    for (int k = 0; k < V; ++k) sum[k] = 0.0f;
    for (int od = rd.begin; od < rd.end; ++od)
      for (int oh = rh.begin; oh < rh.end; ++oh)
        for (int ow = rw.begin; ow < rw.end; ++ow) {
          const int r = position(g.kernel, d - (od * g.stride[0] - g.pad[0]), h - (oh * g.stride[1] - g.pad[1]),
                                 at.w - (ow * g.stride[2] - g.pad[2]));
          const int64_t o = site(g.out, n, od, oh, ow) * C + at.cv * V;
          Positions<V> arg;
          arg.load(index + o);
          float g_out[V];
          load_vec(dy + o, g_out);
#pragma unroll
          for (int k = 0; k < V; ++k)
            if (arg.at(k) == static_cast<unsigned>(r)) sum[k] += g_out[k];
        }
    store_vec(dx + site(g.in, n, d, h, at.w) * C + at.cv * V, sum);
  }
}

// Blocks of kThreads over one row's (W x channel vectors), H rows, and (N x D) in z; false
// where a size is beyond max_pool_obstacle's limits.
bool grid_for(const int64_t* size, int64_t batch, int64_t cvecs, dim3* grid) {
  if (size[2] * cvecs >= (int64_t{1} << 31) || size[1] > 65535 || batch * size[0] >= (int64_t{1} << 31)) return false;
  *grid = dim3(static_cast<unsigned>((size[2] * cvecs + kThreads - 1) / kThreads), static_cast<unsigned>(size[1]),
               static_cast<unsigned>(std::min<int64_t>(batch * size[0], kMaxGridZ)));
  return true;
}

template <typename T>
cudaError_t forward_as(const ForwardArgs& a, cudaStream_t stream) {
  dim3 grid;
  if (!grid_for(a.g.out, a.g.batch, a.g.channels / kVec<T>, &grid)) return cudaErrorInvalidConfiguration;
  forward_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(a.x), static_cast<T*>(a.y), a.index,
                                                   narrow(a.g));
  return cudaGetLastError();
}

template <typename T>
cudaError_t backward_as(const BackwardArgs& a, cudaStream_t stream) {
  dim3 grid;
  if (!grid_for(a.g.in, a.g.batch, a.g.channels / kVec<T>, &grid)) return cudaErrorInvalidConfiguration;
  backward_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(a.dy), a.index, static_cast<T*>(a.dx),
                                                    narrow(a.g));
  return cudaGetLastError();
}

}  // namespace

cudaError_t cuda_forward(const ForwardArgs& a, cudaStream_t stream) {
  return kernel::with_element<float, __half, __nv_bfloat16>(
      a.dtype, [&](auto e) { return forward_as<typename decltype(e)::type>(a, stream); });
}

cudaError_t cuda_backward(const BackwardArgs& a, cudaStream_t stream) {
  return kernel::with_element<float, __half, __nv_bfloat16>(
      a.dtype, [&](auto e) { return backward_as<typename decltype(e)::type>(a, stream); });
}

}  // namespace lockstep::maxpool
