// bn_act_host: the CPU passes of bn_act_kernels.hpp, the same steps as the CUDA kernels
// (row blocks of partial moments and sums, combined per channel in block order, then the
// values), with bn_act_math.hpp's arithmetic. The row blocks are a fixed partition
// (kParts), so the results do not depend on the number of threads.
#include <ATen/Parallel.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <vector>

#include "core/model/bn_act_kernels.hpp"
#include "core/model/bn_act_math.hpp"

namespace lockstep::bnact {
namespace {

constexpr int64_t kParts = 64;

int64_t parts_of(int64_t rows) { return std::min(rows, kParts); }

// F(p, begin, end) for every row block p of ROWS (rows [begin, end)), on torch's intra-op
// threads: the partial sums' blocks, as the CUDA kernels' grid rows.
template <typename F>
void each_row_block(int64_t rows, const F& f) {
  const int64_t parts = parts_of(rows);
  at::parallel_for(0, parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) f(p, p * rows / parts, (p + 1) * rows / parts);
  });
}

template <typename T>
void forward_as(const ForwardArgs& a) {
  const int64_t C = a.channels, parts = parts_of(a.rows);
  float* part_mean = a.work;
  float* part_m2 = part_mean + parts * C;
  float* part_n = part_m2 + parts * C;
  const T* x = static_cast<const T*>(a.x);
  each_row_block(a.rows, [&](int64_t p, int64_t begin, int64_t end) {
    float* mean = part_mean + p * C;
    float* m2 = part_m2 + p * C;
    std::fill(mean, mean + C, 0.0f);
    std::fill(m2, m2 + C, 0.0f);
    float n = 0.0f;
    for (int64_t r = begin; r < end; ++r) {
      n += 1.0f;
      const float inv_n = 1.0f / n;
      for (int64_t c = 0; c < C; ++c) add_value(mean[c], m2[c], static_cast<float>(x[r * C + c]), inv_n);
    }
    part_n[p] = n;
  });
  for (int64_t c = 0; c < C; ++c) {
    Moments m{0.0f, 0.0f, 0.0f};
    for (int64_t p = 0; p < parts; ++p) m = combine(m, {part_n[p], part_mean[p * C + c], part_m2[p * C + c]});
    const ChannelStats s = finish_stats(m, a.weight[c], a.bias[c], a.eps, a.momentum,
                                        a.running_mean ? a.running_mean + c : nullptr,
                                        a.running_var ? a.running_var + c : nullptr);
    a.stats[c] = s.mean, a.stats[C + c] = s.invstd, a.stats[2 * C + c] = s.scale, a.stats[3 * C + c] = s.shift;
  }
  std::vector<ChannelStats> s(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) s[static_cast<size_t>(c)] = {0.0f, 0.0f, a.stats[2 * C + c], a.stats[3 * C + c]};
  const T* res = static_cast<const T*>(a.residual);
  T* y = static_cast<T*>(a.y);
  at::parallel_for(0, a.rows, 256, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0, i = r * C; c < C; ++c, ++i) {
        const float v = pre_act(static_cast<float>(x[i]), s[static_cast<size_t>(c)]);
        y[i] = static_cast<T>(relu(res ? v + static_cast<float>(res[i]) : v));
      }
  });
}

template <typename T>
void backward_as(const BackwardArgs& a) {
  const int64_t C = a.channels, parts = parts_of(a.rows);
  float* part_g = a.work;
  float* part_gx = part_g + parts * C;
  std::vector<ChannelStats> s(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c)
    s[static_cast<size_t>(c)] = {a.stats[c], a.stats[C + c], a.stats[2 * C + c], a.stats[3 * C + c]};
  const T* dy = static_cast<const T*>(a.dy);
  const T* x = static_cast<const T*>(a.x);
  const T* y = static_cast<const T*>(a.y);
  // The ReLU's gradient at element I of channel C: from the forward output with a residual,
  // else from x.
  const auto masked = [&](int64_t i, int64_t c, float xv) {
    const float v = y ? static_cast<float>(y[i]) : pre_act(xv, s[static_cast<size_t>(c)]);
    return relu_grad(static_cast<float>(dy[i]), v);
  };
  each_row_block(a.rows, [&](int64_t p, int64_t begin, int64_t end) {
    float* sg = part_g + p * C;
    float* sgx = part_gx + p * C;
    std::fill(sg, sg + C, 0.0f);
    std::fill(sgx, sgx + C, 0.0f);
    for (int64_t r = begin; r < end; ++r)
      for (int64_t c = 0; c < C; ++c) {
        const float xv = static_cast<float>(x[r * C + c]);
        const float g = masked(r * C + c, c, xv);
        sg[c] += g;
        sgx[c] = fmaf(g, xv - s[static_cast<size_t>(c)].mean, sgx[c]);
      }
  });
  std::vector<InputGradCoeffs> k(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    float sg = 0.0f, sgx = 0.0f;
    for (int64_t p = 0; p < parts; ++p) sg += part_g[p * C + c], sgx += part_gx[p * C + c];
    const ChannelStats& sc = s[static_cast<size_t>(c)];
    a.dbias[c] = sg;
    a.dweight[c] = sgx * sc.invstd;
    k[static_cast<size_t>(c)] = input_grad_coeffs(sc, a.weight[c], static_cast<float>(a.rows), sg, sgx);
  }
  T* dx = static_cast<T*>(a.dx);
  T* dres = static_cast<T*>(a.dresidual);
  at::parallel_for(0, a.rows, 256, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0, i = r * C; c < C; ++c, ++i) {
        const float xv = static_cast<float>(x[i]);
        const float g = masked(i, c, xv);
        dx[i] = static_cast<T>(input_grad(k[static_cast<size_t>(c)], g, xv, s[static_cast<size_t>(c)].mean));
        if (dres) dres[i] = static_cast<T>(g);
      }
  });
}

}  // namespace

int64_t host_work_floats(int64_t rows, int64_t channels) {
  const int64_t parts = parts_of(rows);
  return 2 * parts * channels + parts;
}

void host_forward(const ForwardArgs& a) {
  kernel::with_element<float, c10::Half, c10::BFloat16>(a.dtype, [&](auto e) { forward_as<typename decltype(e)::type>(a); });
}

void host_backward(const BackwardArgs& a) {
  kernel::with_element<float, c10::Half, c10::BFloat16>(a.dtype, [&](auto e) { backward_as<typename decltype(e)::type>(a); });
}

}  // namespace lockstep::bnact
