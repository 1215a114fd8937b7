// bn_act_math: the per-value and per-channel arithmetic of the fused BatchNorm (+ residual) +
// ReLU (bn_act.hpp), written once for its CPU loops (bn_act_host.cpp) and its CUDA kernels
// (bn_act_kernels.cu), so that a CPU test of the formulas is a test of the GPU's formulas.
// Only float arithmetic that IEEE rounds the same on both (fmaf, /, sqrtf): given the same
// partial sums, CPU and GPU compute the same bits; only the order of the sums differs.
//
// Forward, per channel c over its n values x (training mode):
//   mean, var = biased variance (Welford per thread, Chan's combination across threads)
//   invstd = 1 / sqrt(var + eps);  scale = w * invstd;  shift = b - mean * scale
//   v = x * scale + shift [+ r];   y = v <= 0 ? 0 : v   (NaN passes, as ATen's relu)
//   running_mean += momentum * (mean - running_mean); likewise running_var with var * n/(n-1)
// Backward, g = dy where the ReLU passed (!(v <= 0)), else 0:
//   dbias = sum g;  dweight = invstd * sum g (x - mean)
//   dx = w invstd (g - sum g / n - (x - mean) invstd^2 sum g (x - mean) / n);  dresidual = g
#pragma once

#include <math.h>

#ifdef __CUDACC__
#define LOCKSTEP_HD __host__ __device__ __forceinline__
#else
#define LOCKSTEP_HD inline
#endif

namespace lockstep::bnact {

// Count, mean and sum of squared deviations of one channel's values seen so far.
struct Moments {
  float n, mean, m2;
};

// Welford's update with the value X as the N-th (INV_N = 1/N, one division per row).
LOCKSTEP_HD void add_value(float& mean, float& m2, float x, float inv_n) {
  const float d = x - mean;
  mean = fmaf(d, inv_n, mean);
  m2 = fmaf(d, x - mean, m2);
}

// Chan et al.'s combination of two disjoint sets' moments.
LOCKSTEP_HD Moments combine(Moments a, Moments b) {
  if (b.n == 0) return a;
  if (a.n == 0) return b;
  const float n = a.n + b.n, f = b.n / n, d = b.mean - a.mean;
  return {n, fmaf(d, f, a.mean), a.m2 + b.m2 + d * d * a.n * f};
}

// What forward keeps per channel for the values pass and for backward.
struct ChannelStats {
  float mean, invstd, scale, shift;
};

// A channel's statistics from its moments (N >= 2: bn_act_obstacle), and its running
// estimates updated in place (RUNNING_MEAN/VAR null: not tracked).
LOCKSTEP_HD ChannelStats finish_stats(Moments m, float w, float b, float eps, float momentum, float* running_mean,
                                      float* running_var) {
  const float var = m.m2 / m.n;
  ChannelStats s;
  s.mean = m.mean;
  s.invstd = 1.0f / sqrtf(var + eps);
  s.scale = w * s.invstd;
  s.shift = fmaf(-m.mean, s.scale, b);
  if (running_mean != nullptr) {
    *running_mean = fmaf(momentum, m.mean - *running_mean, *running_mean);
    *running_var = fmaf(momentum, m.m2 / (m.n - 1.0f) - *running_var, *running_var);
  }
  return s;
}

// The normalised, shifted value before the ReLU (plus the residual R where there is one).
LOCKSTEP_HD float pre_act(float x, const ChannelStats& s) { return fmaf(x, s.scale, s.shift); }
LOCKSTEP_HD float relu(float v) { return v <= 0.0f ? 0.0f : v; }
// The gradient through the ReLU: V is the value before it, or its output (with a residual).
// From the value before it, a positive value that rounds to 0 in fp16 (below ~3e-8) passes
// its gradient where ATen's (from the rounded output) would not: the ReLU's true derivative.
LOCKSTEP_HD float relu_grad(float dy, float v) { return v <= 0.0f ? 0.0f : dy; }

// dx = a g + b (x - mean) + c per channel, from the sums over the channel's N values.
struct InputGradCoeffs {
  float a, b, c;
};

LOCKSTEP_HD InputGradCoeffs input_grad_coeffs(const ChannelStats& s, float w, float n, float sum_g, float sum_gx) {
  const float k = w * s.invstd;
  return {k, -k * s.invstd * s.invstd * (sum_gx / n), -k * (sum_g / n)};
}

LOCKSTEP_HD float input_grad(const InputGradCoeffs& k, float g, float x, float mean) {
  return fmaf(k.a, g, fmaf(k.b, x - mean, k.c));
}

}  // namespace lockstep::bnact
