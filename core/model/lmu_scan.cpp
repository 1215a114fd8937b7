// lmu_scan: see lmu_scan.hpp. Forward starts S as a copy of C and adds each step's product
// in place (S[t] += S[t-1] W, then tanh in place on its first H columns); backward walks the
// steps in reverse the same way through one buffer of dz (a copy of the incoming gradient),
// then forms W's gradient in one product. Every per-step operator is an in-place ATen call
// on views (an in-place addmm is one GEMM with beta = 1: no copy), so a step launches two
// kernels on a GPU in each direction and allocates nothing.
#include "core/model/lmu_scan.hpp"

#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/torch.h>

#include "core/base/error.hpp"

namespace lockstep {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class LmuScanFunction : public torch::autograd::Function<LmuScanFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& c, const at::Tensor& w, int64_t hidden) {
    at::Tensor s = c.clone(at::MemoryFormat::Contiguous);  // S[t] = C[t] + S[t-1] W, S[-1] = 0
    for (int64_t t = 0; t < s.size(0); ++t) {
      at::Tensor st = s.select(0, t);
      if (t > 0) st.addmm_(s.select(0, t - 1), w);
      st.narrow(1, 0, hidden).tanh_();
    }
    ctx->save_for_backward({s, w});
    ctx->saved_data["hidden"] = hidden;
    return s;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    LOCKSTEP_REQUIRE(!torch::GradMode::is_enabled(),
                     "lmu: the LMU's recurrence (lmu_scan) has no second derivative (backward with create_graph)");
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& s = saved[0];
    const at::Tensor& w = saved[1];
    const int64_t hidden = ctx->saved_data["hidden"].toInt();
    const at::Tensor wt = w.t();
    const int64_t steps = s.size(0), k = s.size(2);
    // dz_t = d(loss)/d(z_t): what reaches s_t (from the outputs, grads[0], and from step t+1
    // through W), then through the tanh on the hidden part.
    at::Tensor dz = grads[0].clone(at::MemoryFormat::Contiguous);
    for (int64_t t = steps - 1; t >= 0; --t) {
      at::Tensor g = dz.select(0, t);
      if (t < steps - 1) g.addmm_(dz.select(0, t + 1), wt);
      at::Tensor gh = g.narrow(1, 0, hidden);
      at::tanh_backward_out(gh, gh, s.select(0, t).narrow(1, 0, hidden));
    }
    // dW = sum over t >= 1 of s_{t-1}^T dz_t (s_{-1} = 0 adds nothing).
    const at::Tensor dw = steps > 1 ? at::mm(s.narrow(0, 0, steps - 1).reshape({-1, k}).t(),
                                             dz.narrow(0, 1, steps - 1).reshape({-1, k}))
                                    : at::zeros_like(w);
    return {dz, dw, at::Tensor()};
  }
};

}  // namespace

LmuFold lmu_fold(const LmuCell& cell, const at::Tensor& ux, const at::Tensor& hx) {
  // Autocast off: its 16-bit matrix products would round W, which every step multiplies by.
  const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  const auto dtype = at::promote_types(cell.w_h.scalar_type(), at::kFloat);
  const auto as = [dtype](const at::Tensor& t) { return t.to(dtype); };
  const int64_t hidden = cell.w_h.size(0), order = cell.abar_t.size(0);
  const at::Tensor bbar = as(cell.bbar), wm_t = as(cell.w_m).t();
  const at::Tensor e = at::cat({as(cell.e_h), as(cell.e_m)}, 1).t();  // [H+O, 1]
  const at::Tensor p = e.mm(bbar) + at::cat({at::zeros({hidden, order}, bbar.options()), as(cell.abar_t)}, 0);
  const at::Tensor q = p.mm(wm_t) + at::cat({as(cell.w_h).t(), at::zeros({order, hidden}, bbar.options())}, 0);
  const at::Tensor u = as(ux);
  return {at::cat({as(hx) + u * bbar.mm(wm_t), u * bbar}, 2), at::cat({q, p}, 1)};
}

at::Tensor lmu_scan(const at::Tensor& c, const at::Tensor& w, int64_t hidden) {
  LOCKSTEP_REQUIRE(c.dim() == 3 && c.size(0) > 0 && w.dim() == 2 && w.size(0) == c.size(2) && w.size(1) == c.size(2),
                   c10::str("lmu_scan: expected C [L > 0, N, K] and W [K, K], got ", c.sizes(), " and ", w.sizes()));
  LOCKSTEP_REQUIRE(hidden > 0 && hidden <= c.size(2), c10::str("lmu_scan: hidden ", hidden, " not in 1..", c.size(2)));
  LOCKSTEP_REQUIRE(c.scalar_type() == w.scalar_type() && c.device() == w.device() && c.is_floating_point(),
                   c10::str("lmu_scan: C and W must be floating point of one dtype and device, got ",
                            c.scalar_type(), " on ", c.device(), " and ", w.scalar_type(), " on ", w.device()));
  return LmuScanFunction::apply(c, w, hidden);
}

}  // namespace lockstep
