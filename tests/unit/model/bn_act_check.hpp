// bn_act_check: the fused BatchNorm (+ residual) + ReLU (core/model/bn_act.hpp) against
// ATen's batch_norm + add + relu in float64 from the same inputs — shared by the CPU unit
// test (tests/unit/model/test_bn_act.cpp) and the GPU test (tests/gpu/test_bn_act_gpu.cpp).
#pragma once

#include <gtest/gtest.h>

#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/model/bn_act.hpp"

namespace lockstep::testing {

inline c10::MemoryFormat layout_of(int64_t dim) {
  return dim == 4 ? c10::MemoryFormat::ChannelsLast
                  : dim == 5 ? c10::MemoryFormat::ChannelsLast3d : c10::MemoryFormat::Contiguous;
}

struct Case {
  std::vector<int64_t> shape;
  torch::ScalarType dtype;
  bool residual;
};

struct Result {
  torch::Tensor y, dx, dweight, dbias, dresidual, running_mean, running_var;
};

// One forward and backward from the same inputs (made on the CPU): fused (bn_act) on DEVICE,
// or by ATen in float64 on the CPU. The results come back to the CPU.
inline Result run(const Case& c, bool fused, torch::Device device = torch::kCPU) {
  torch::manual_seed(11);
  const int64_t channels = c.shape[1];
  const auto layout = layout_of(static_cast<int64_t>(c.shape.size()));
  // A mean away from 0 and a spread per channel, as a convolution's output has.
  torch::Tensor x = (torch::randn(c.shape) * 1.5 + 0.7).to(c.dtype).contiguous(layout);
  torch::Tensor r = (torch::randn(c.shape) * 0.5).to(c.dtype).contiguous(layout);
  torch::Tensor dy = torch::randn(c.shape).to(c.dtype).contiguous(layout);
  torch::Tensor w = torch::rand({channels}) + 0.5, b = torch::randn({channels}) * 0.1;
  torch::Tensor rm = torch::randn({channels}) * 0.1, rv = torch::rand({channels}) + 0.5;
  {
    // Where the value before the ReLU is within 1e-4 of 0, float32 and float64 may take
    // different sides of it (a whole gradient apart): no gradient arrives there, so both
    // agree whichever side they take. (Large shapes have a few such values.)
    torch::NoGradGuard no_grad;
    torch::Tensor z = torch::batch_norm(x.to(torch::kDouble), w.to(torch::kDouble), b.to(torch::kDouble), {}, {}, true,
                                        0.1, 1e-5, false);
    if (c.residual) z = z + r.to(torch::kDouble);
    dy.masked_fill_(z.abs().lt(1e-4), 0);
  }
  Result out;
  if (fused) {
    for (torch::Tensor* t : {&x, &r, &dy, &w, &b, &rm, &rv}) *t = t->to(device);
    x.requires_grad_(true), w.requires_grad_(true), b.requires_grad_(true);
    if (c.residual) r.requires_grad_(true);
    out.y = bn_act({x, c.residual ? r : torch::Tensor(), w, b, rm, rv, 0.1, 1e-5});
    out.y.backward(dy);
  } else {
    torch::Tensor xd = x.to(torch::kDouble).requires_grad_(true), rd = r.to(torch::kDouble).requires_grad_(true);
    torch::Tensor wd = w.to(torch::kDouble).requires_grad_(true), bd = b.to(torch::kDouble).requires_grad_(true);
    torch::Tensor rmd = rm.to(torch::kDouble), rvd = rv.to(torch::kDouble);
    torch::Tensor z = torch::batch_norm(xd, wd, bd, rmd, rvd, true, 0.1, 1e-5, false);
    out.y = torch::relu(c.residual ? z + rd : z);
    out.y.backward(dy.to(torch::kDouble));
    x = xd, r = rd, w = wd, b = bd, rm = rmd, rv = rvd;
  }
  out.dx = x.grad(), out.dweight = w.grad(), out.dbias = b.grad();
  if (c.residual) out.dresidual = r.grad();
  out.running_mean = rm, out.running_var = rv;
  for (torch::Tensor* t : {&out.y, &out.dx, &out.dweight, &out.dbias, &out.dresidual, &out.running_mean,
                           &out.running_var})
    if (t->defined()) *t = t->cpu();
  return out;
}

// |a - ref| <= tol * (1 + |ref|) everywhere, in float64; the largest excess in the message.
inline ::testing::AssertionResult near(const torch::Tensor& a, const torch::Tensor& ref, double tol) {
  const torch::Tensor ad = a.to(torch::kDouble), rd = ref.to(torch::kDouble);
  const double worst = ((ad - rd).abs() - tol * (1 + rd.abs())).max().item<double>();
  if (worst <= 0 && !ad.isnan().any().item<bool>()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "off by " << worst << " beyond tol " << tol << " (max |ref| "
                                       << rd.abs().max().item<double>() << ")";
}


// How many fused nodes the autograd graph behind LOSS holds.
inline int fused_nodes(const torch::Tensor& loss) {
  int found = 0;
  std::vector<torch::autograd::Node*> todo{loss.grad_fn().get()}, seen;
  while (!todo.empty()) {
    torch::autograd::Node* n = todo.back();
    todo.pop_back();
    if (n == nullptr || std::find(seen.begin(), seen.end(), n) != seen.end()) continue;
    seen.push_back(n);
    if (n->name().find("BnActFunction") != std::string::npos) ++found;
    for (const auto& e : n->next_edges()) todo.push_back(e.function.get());
  }
  return found;
}

// x's gradient through bn_act on DEVICE when the incoming gradient is a dense view at an odd
// offset (a slice of a larger one: OFFSET) or an aligned one: the two must be equal (the
// CUDA kernels' 16-byte loads need alignment; bn_act copies such a gradient). *MISALIGNED:
// whether the gradient arriving at bn_act's node was off 16 bytes (the premise).
inline torch::Tensor grad_at_offset(bool offset, torch::Device device, bool* misaligned) {
  torch::manual_seed(8);
  const torch::Tensor x = torch::randn({8, 16}).to(device).requires_grad_(true), w = torch::randn({129}).to(device);
  const auto o = torch::TensorOptions().device(device);
  const torch::Tensor y = bn_act({x, {}, torch::ones({16}, o), torch::zeros({16}, o), {}, {}, 0.1, 1e-5});
  const torch::Tensor one = torch::ones({1}, o);
  y.register_hook([misaligned](const torch::Tensor& g) {
    *misaligned = reinterpret_cast<uintptr_t>(g.data_ptr()) % 16 != 0;
    return g;
  });
  if (offset)
    (torch::cat({one, y.view(-1)}) * w).sum().backward();
  else
    (torch::cat({y.view(-1), one}) * w.roll(-1)).sum().backward();
  return x.grad().cpu();
}

// Every result of the fused pass F against ATen's float64 REF. Outputs and input gradients
// are rounded to the element type; the statistics and parameter gradients are float32 sums.
inline void expect_matches(const Case& c, const Result& f, const Result& ref) {
  const double tol = c.dtype == torch::kFloat ? 2e-5 : c.dtype == torch::kHalf ? 2e-3 : 1.6e-2;
  const double sum_tol = c.dtype == torch::kFloat ? 1e-4 : 2e-2;
  const std::string what = std::string(c10::toString(c.dtype)) + " " + c10::str(c10::IntArrayRef(c.shape)) +
                           (c.residual ? " with residual" : "");
  EXPECT_TRUE(near(f.y, ref.y, tol)) << what << ": y";
  EXPECT_TRUE(near(f.dx, ref.dx, tol)) << what << ": dx";
  EXPECT_TRUE(near(f.dweight, ref.dweight, sum_tol)) << what << ": dweight";
  EXPECT_TRUE(near(f.dbias, ref.dbias, sum_tol)) << what << ": dbias";
  if (c.residual) EXPECT_TRUE(near(f.dresidual, ref.dresidual, tol)) << what << ": dresidual";
  EXPECT_TRUE(near(f.running_mean, ref.running_mean, 1e-6)) << what << ": running_mean";
  EXPECT_TRUE(near(f.running_var, ref.running_var, 1e-5)) << what << ": running_var (unbiased)";
  // The outputs keep the input's layout.
  EXPECT_TRUE(f.y.is_contiguous(layout_of(static_cast<int64_t>(c.shape.size())))) << what;
  EXPECT_TRUE(f.dx.is_contiguous(layout_of(static_cast<int64_t>(c.shape.size())))) << what;
}

}  // namespace lockstep::testing
