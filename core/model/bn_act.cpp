// bn_act: see bn_act.hpp. The autograd node around bn_act_kernels.hpp's passes.
#include "core/model/bn_act.hpp"

#include <torch/torch.h>

#include "core/base/error.hpp"
#include "core/model/bn_act_kernels.hpp"
#include "core/model/kernel_tensor.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "core/dist/checks.hpp"
#endif

namespace lockstep {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

using kernel::aligned16;
using kernel::channels_innermost;
using kernel::dtype_of;

bool float_vector(const at::Tensor& t, int64_t c, const at::Tensor& x) {
  return t.defined() && t.scalar_type() == at::kFloat && t.dim() == 1 && t.size(0) == c && t.is_contiguous() &&
         t.device() == x.device();
}

// Scratch of FLOATS float32 values on X's device.
at::Tensor scratch(const at::Tensor& x, int64_t floats) { return at::empty({floats}, x.options().dtype(at::kFloat)); }

int64_t work_floats(const at::Tensor& x, bnact::Dtype d, int64_t rows, int64_t c) {
  if (x.is_cpu()) return bnact::host_work_floats(rows, c);
#ifdef LOCKSTEP_HAVE_CUDA
  int64_t floats = 0;
  CUDA_CHECK(bnact::cuda_work_floats(d, x.get_device(), rows, c, &floats));
  return floats;
#else
  (void)d;
  throw Error("bn_act: this build has no CUDA");
#endif
}

// Every tensor input is defined (autograd records each one's device): no residual and no
// running estimates come as empty tensors.
class BnActFunction : public torch::autograd::Function<BnActFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                            const at::Tensor& residual, const at::Tensor& running_mean, const at::Tensor& running_var,
                            double momentum, double eps) {
    const int64_t c = x.size(1), rows = x.numel() / c;
    bnact::ForwardArgs a{};
    dtype_of(x.scalar_type(), &a.dtype);
    at::Tensor y = at::empty_like(x);
    at::Tensor stats = at::empty({4, c}, weight.options());
    at::Tensor work = scratch(x, work_floats(x, a.dtype, rows, c));
    a.rows = rows, a.channels = c;
    const bool has_residual = residual.numel() > 0, tracked = running_mean.numel() > 0;
    a.x = x.data_ptr(), a.residual = has_residual ? residual.data_ptr() : nullptr, a.y = y.data_ptr();
    a.weight = weight.data_ptr<float>(), a.bias = bias.data_ptr<float>();
    a.running_mean = tracked ? running_mean.data_ptr<float>() : nullptr;
    a.running_var = tracked ? running_var.data_ptr<float>() : nullptr;
    a.momentum = static_cast<float>(momentum), a.eps = static_cast<float>(eps);
    a.stats = stats.data_ptr<float>(), a.work = work.data_ptr<float>();
    if (x.is_cpu()) {
      bnact::host_forward(a);
    } else {
#ifdef LOCKSTEP_HAVE_CUDA
      const c10::cuda::CUDAGuard guard(x.device());
      CUDA_CHECK(bnact::cuda_forward(a, x.get_device(), c10::cuda::getCurrentCUDAStream(x.get_device()).stream()));
#endif
    }
    // With a residual the ReLU's mask comes from y (x alone no longer decides its sign).
    ctx->save_for_backward({x, weight, stats, has_residual ? y : at::Tensor()});
    ctx->saved_data["residual"] = has_residual;
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& stats = saved[2];
    const at::Tensor& y = saved[3];
    const bool has_residual = ctx->saved_data["residual"].toBool();
    const int64_t c = x.size(1), rows = x.numel() / c;
    // The incoming gradient may be a dense view at any offset: the kernels' 16-byte loads need
    // an aligned one.
    at::Tensor dy = grads[0].contiguous(channels_innermost(x.dim()));
    if (!aligned16(dy)) dy = dy.clone(channels_innermost(x.dim()));
    bnact::BackwardArgs a{};
    dtype_of(x.scalar_type(), &a.dtype);
    at::Tensor dx = at::empty_like(x);
    at::Tensor dres = has_residual ? at::empty_like(x) : at::Tensor();
    at::Tensor dweight = at::empty({c}, weight.options()), dbias = at::empty({c}, weight.options());
    at::Tensor work = scratch(x, work_floats(x, a.dtype, rows, c));
    a.rows = rows, a.channels = c;
    a.dy = dy.data_ptr(), a.x = x.data_ptr(), a.y = has_residual ? y.data_ptr() : nullptr;
    a.weight = weight.data_ptr<float>(), a.stats = stats.data_ptr<float>();
    a.dx = dx.data_ptr(), a.dresidual = has_residual ? dres.data_ptr() : nullptr;
    a.dweight = dweight.data_ptr<float>(), a.dbias = dbias.data_ptr<float>(), a.work = work.data_ptr<float>();
    if (x.is_cpu()) {
      bnact::host_backward(a);
    } else {
#ifdef LOCKSTEP_HAVE_CUDA
      const c10::cuda::CUDAGuard guard(x.device());
      CUDA_CHECK(bnact::cuda_backward(a, x.get_device(), c10::cuda::getCurrentCUDAStream(x.get_device()).stream()));
#endif
    }
    return {dx, dweight, dbias, dres, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

std::string bn_act_obstacle(const BnActInputs& in) {
  const at::Tensor& x = in.x;
  if (!x.defined() || (x.dim() != 2 && x.dim() != 4 && x.dim() != 5)) return "the input is not 2-, 4- or 5-d";
  bnact::Dtype d{};
  if (!dtype_of(x.scalar_type(), &d)) return std::string("dtype ") + c10::toString(x.scalar_type());
#ifdef LOCKSTEP_HAVE_CUDA
  if (!x.is_cpu() && !x.is_cuda()) return "device " + x.device().str();
#else
  if (!x.is_cpu()) return "device " + x.device().str() + " (this build has no CUDA)";
#endif
  if (!x.is_contiguous(channels_innermost(x.dim()))) return "the channels are not innermost (channels-last)";
  const int64_t c = x.size(1);
  if (c % bnact::vector_width(d) != 0)
    return std::to_string(c) + " channels, not a multiple of " + std::to_string(bnact::vector_width(d));
  if (c == 0 || x.numel() / c < 2) return "fewer than 2 values per channel";
  if (!aligned16(x)) return "the input is not 16-byte aligned";
  if (in.residual.defined() && (in.residual.sizes() != x.sizes() || in.residual.strides() != x.strides() ||
                                in.residual.scalar_type() != x.scalar_type() ||
                                in.residual.device() != x.device() || !aligned16(in.residual)))
    return "the residual's sizes, layout, dtype or device differ from the input's";
  if (!float_vector(in.weight, c, x) || !float_vector(in.bias, c, x)) return "the parameters are not float32 [C]";
  if (in.running_mean.defined() != in.running_var.defined() ||
      (in.running_mean.defined() && (!float_vector(in.running_mean, c, x) || !float_vector(in.running_var, c, x))))
    return "the running statistics are not float32 [C]";
  return "";
}

at::Tensor bn_act(const BnActInputs& in) {
  const std::string obstacle = bn_act_obstacle(in);
  LOCKSTEP_REQUIRE(obstacle.empty(), "bn_act: " + obstacle);
  const at::Tensor none = at::empty({0}, in.x.options());
  const auto given = [&](const at::Tensor& t) { return t.defined() ? t : none; };
  return BnActFunction::apply(in.x, in.weight, in.bias, given(in.residual), given(in.running_mean),
                              given(in.running_var), in.momentum, in.eps);
}

}  // namespace lockstep
