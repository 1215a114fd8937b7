// max_pool_host: the CPU passes of max_pool_kernels.hpp, the CUDA kernels' rules as loops
// (max_pool_math.hpp), one output site (forward) or input site (backward) at a time on
// torch's intra-op threads. Each value is computed by one thread alone, so the results do not
// depend on the thread count.
#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "core/model/max_pool_math.hpp"

namespace lockstep::maxpool {
namespace {

// F(n, d, h, w) for every site of a [batch, size...] grid, on torch's threads.
template <typename F>
void each_site(int64_t batch, const int64_t* size, const F& f) {
  const int64_t sites = batch * size[0] * size[1] * size[2];
  at::parallel_for(0, sites, 64, [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) {
      const int64_t w = s % size[2], h = s / size[2] % size[1], d = s / (size[2] * size[1]) % size[0];
      f(s / (size[2] * size[1] * size[0]), d, h, w);
    }
  });
}

template <typename T>
void forward_as(const ForwardArgs& a) {
  const Geometry& g = a.g;
  const int64_t C = g.channels;
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  each_site(g.batch, g.out, [&](int64_t n, int64_t od, int64_t oh, int64_t ow) {
    const auto sd = window(od, g.kernel[0], g.stride[0], g.pad[0], g.in[0]);
    const auto sh = window(oh, g.kernel[1], g.stride[1], g.pad[1], g.in[1]);
    const auto sw = window(ow, g.kernel[2], g.stride[2], g.pad[2], g.in[2]);
    // The maximum as float (compared) and as stored (written back: NaN payloads kept).
    std::vector<float> best(static_cast<size_t>(C), -std::numeric_limits<float>::infinity());
    std::vector<T> kept(static_cast<size_t>(C), static_cast<T>(-std::numeric_limits<float>::infinity()));
    const auto first = static_cast<uint8_t>(position(g.kernel, sd.begin - sd.start, sh.begin - sh.start, sw.begin - sw.start));
    const int64_t o = site(g.out, n, od, oh, ow) * C;
    for (int64_t c = 0; c < C; ++c) a.index[o + c] = first;
    for (int64_t d = sd.begin; d < sd.end; ++d)
      for (int64_t h = sh.begin; h < sh.end; ++h)
        for (int64_t w = sw.begin; w < sw.end; ++w) {
          const auto r = static_cast<uint8_t>(position(g.kernel, d - sd.start, h - sh.start, w - sw.start));
          const T* v = x + site(g.in, n, d, h, w) * C;
          for (int64_t c = 0; c < C; ++c) {
            const float f = static_cast<float>(v[c]);
            if (replaces(f, best[c])) best[c] = f, kept[c] = v[c], a.index[o + c] = r;
          }
        }
    std::copy(kept.begin(), kept.end(), y + o);
  });
}

template <typename T>
void backward_as(const BackwardArgs& a) {
  const Geometry& g = a.g;
  const int64_t C = g.channels;
  const T* dy = static_cast<const T*>(a.dy);
  T* dx = static_cast<T*>(a.dx);
  each_site(g.batch, g.in, [&](int64_t n, int64_t d, int64_t h, int64_t w) {
    const auto rd = covering(d, g.kernel[0], g.stride[0], g.pad[0], g.out[0]);
    const auto rh = covering(h, g.kernel[1], g.stride[1], g.pad[1], g.out[1]);
    const auto rw = covering(w, g.kernel[2], g.stride[2], g.pad[2], g.out[2]);
    std::vector<float> sum(static_cast<size_t>(C), 0.0f);
    for (int64_t od = rd.begin; od < rd.end; ++od)
      for (int64_t oh = rh.begin; oh < rh.end; ++oh)
        for (int64_t ow = rw.begin; ow < rw.end; ++ow) {
          const int64_t r = position(g.kernel, d - (od * g.stride[0] - g.pad[0]), h - (oh * g.stride[1] - g.pad[1]),
                                     w - (ow * g.stride[2] - g.pad[2]));
          const int64_t o = site(g.out, n, od, oh, ow) * C;
          for (int64_t c = 0; c < C; ++c)
            if (a.index[o + c] == r) sum[c] += static_cast<float>(dy[o + c]);
        }
    T* out = dx + site(g.in, n, d, h, w) * C;
    for (int64_t c = 0; c < C; ++c) out[c] = static_cast<T>(sum[c]);
  });
}

}  // namespace

void host_forward(const ForwardArgs& a) {
  kernel::with_element<float, c10::Half, c10::BFloat16>(a.dtype, [&](auto e) { forward_as<typename decltype(e)::type>(a); });
}

void host_backward(const BackwardArgs& a) {
  kernel::with_element<float, c10::Half, c10::BFloat16>(a.dtype, [&](auto e) { backward_as<typename decltype(e)::type>(a); });
}

}  // namespace lockstep::maxpool
