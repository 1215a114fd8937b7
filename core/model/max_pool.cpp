// max_pool: see max_pool.hpp. The autograd node around max_pool_kernels.hpp's passes.
#include "core/model/max_pool.hpp"

#include <torch/torch.h>

#include <cstring>
#include <type_traits>

#include "core/base/error.hpp"
#include "core/model/kernel_tensor.hpp"
#include "core/model/max_pool_kernels.hpp"

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

constexpr int64_t kMaxPositions = 256;  // a window position is one byte
constexpr int64_t kMaxRows = 65535;     // the CUDA grid's y (max_pool_kernels.cu)
constexpr int64_t kMaxIndex = (int64_t{1} << 31) - 1;  // the CUDA kernels' index arithmetic is int

// The window's geometry over X, or the reason there is none ("" in WHY when there is).
maxpool::Geometry geometry(const at::Tensor& x, const PoolWindow& win, std::string* why) {
  maxpool::Geometry g{};
  const size_t dims = win.kernel.size();
  if ((dims != 2 && dims != 3) || x.dim() != static_cast<int64_t>(dims) + 2 ||
      (!win.stride.empty() && win.stride.size() != dims) || (!win.padding.empty() && win.padding.size() != dims)) {
    *why = "the window is not 2-d over a 4-d input or 3-d over a 5-d input";
    return g;
  }
  g.batch = x.size(0), g.channels = x.size(1);
  const size_t lead = 3 - dims;  // a 2-d pool's D: kernel 1, stride 1, pad 0
  for (size_t i = 0; i < 3; ++i) g.in[i] = 1, g.kernel[i] = 1, g.stride[i] = 1, g.pad[i] = 0, g.out[i] = 1;
  int64_t positions = 1;
  for (size_t i = 0; i < dims; ++i) {
    const int64_t k = win.kernel[i], s = win.stride.empty() ? k : win.stride[i];
    const int64_t p = win.padding.empty() ? 0 : win.padding[i], in = x.size(static_cast<int64_t>(i) + 2);
    if (k < 1 || s < 1 || s > kMaxIndex || p < 0 || 2 * p > k) {
      *why = "kernel, stride or padding out of range (padding at most half the kernel)";
      return g;
    }
    if (in + 2 * p < k) {
      *why = "the input is smaller than the window";
      return g;
    }
    g.in[lead + i] = in, g.kernel[lead + i] = k, g.stride[lead + i] = s, g.pad[lead + i] = p;
    g.out[lead + i] = (in + 2 * p - k) / s + 1;
    positions *= k;
  }
  if (positions > kMaxPositions) *why = "a window of " + std::to_string(positions) + " positions (at most 256)";
  else if (std::max(g.in[1], g.out[1]) > kMaxRows) *why = "more than 65535 rows";
  else if (std::max(g.in[2], g.out[2]) * g.channels > kMaxIndex || std::max(g.in[0], g.out[0]) * g.batch > kMaxIndex ||
           std::max(g.in[1], g.in[2]) + 2 * std::max(g.pad[1], g.pad[2]) > kMaxIndex)
    *why = "a row or the batch too large for the kernels' 32-bit indices";
  return g;
}

// The geometry travels through the autograd context as its 17 integers.
static_assert(std::is_trivially_copyable_v<maxpool::Geometry> && sizeof(maxpool::Geometry) == 17 * sizeof(int64_t));

std::vector<int64_t> sizes_of(const maxpool::Geometry& g, const int64_t* spatial, int64_t dims) {
  std::vector<int64_t> s{g.batch, g.channels};
  for (int64_t i = 3 - dims; i < 3; ++i) s.push_back(spatial[i]);
  return s;
}

#ifdef LOCKSTEP_HAVE_CUDA
cudaStream_t stream_of(const at::Tensor& x) { return c10::cuda::getCurrentCUDAStream(x.get_device()).stream(); }
#endif

class MaxPoolFunction : public torch::autograd::Function<MaxPoolFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const maxpool::Geometry& g) {
    const int64_t dims = x.dim() - 2;
    const auto format = channels_innermost(x.dim());
    const std::vector<int64_t> out = sizes_of(g, g.out, dims);
    at::Tensor y = at::empty(out, x.options().memory_format(format));
    at::Tensor index = at::empty(out, x.options().dtype(at::kByte).memory_format(format));
    maxpool::ForwardArgs a{};
    dtype_of(x.scalar_type(), &a.dtype);
    a.g = g, a.x = x.data_ptr(), a.y = y.data_ptr(), a.index = index.data_ptr<uint8_t>();
    if (x.is_cpu()) {
      maxpool::host_forward(a);
    } else {
#ifdef LOCKSTEP_HAVE_CUDA
      const c10::cuda::CUDAGuard guard(x.device());
      CUDA_CHECK(maxpool::cuda_forward(a, stream_of(x)));
#endif
    }
    ctx->save_for_backward({index});
    ctx->saved_data["geometry"] = std::vector<int64_t>(reinterpret_cast<const int64_t*>(&g),
                                                       reinterpret_cast<const int64_t*>(&g + 1));
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    // The kernels' dx has no graph of its own: a second derivative would silently be zero.
    LOCKSTEP_REQUIRE(!torch::GradMode::is_enabled(),
                     "max_pool: lockstep's max-pool has no second derivative (backward with create_graph); "
                     "--model.max-pool aten has");
    const at::Tensor index = ctx->get_saved_variables()[0];
    const std::vector<int64_t> raw = ctx->saved_data["geometry"].toIntVector();
    maxpool::Geometry g{};
    std::memcpy(&g, raw.data(), sizeof g);
    const int64_t dim = index.dim();  // the input's, as the output's
    const std::vector<int64_t> in = sizes_of(g, g.in, dim - 2);
    const auto format = channels_innermost(dim);
    // The incoming gradient may be a dense view at any offset: the kernels' loads need an
    // aligned one in the output's layout.
    at::Tensor dy = grads[0].contiguous(format);
    if (!aligned16(dy)) dy = dy.clone(format);
    at::Tensor dx = at::empty(in, dy.options().memory_format(format));
    maxpool::BackwardArgs a{};
    dtype_of(dy.scalar_type(), &a.dtype);
    a.g = g, a.dy = dy.data_ptr(), a.index = index.data_ptr<uint8_t>(), a.dx = dx.data_ptr();
    if (dy.is_cpu()) {
      maxpool::host_backward(a);
    } else {
#ifdef LOCKSTEP_HAVE_CUDA
      const c10::cuda::CUDAGuard guard(dy.device());
      CUDA_CHECK(maxpool::cuda_backward(a, stream_of(dy)));
#endif
    }
    return {dx, at::Tensor()};
  }
};

// What X itself must be for the kernels ("" when it is), whatever the window.
std::string tensor_obstacle(const at::Tensor& x) {
  if (!x.defined() || (x.dim() != 4 && x.dim() != 5)) return "the input is not 4- or 5-d";
  kernel::Dtype d{};
  if (!dtype_of(x.scalar_type(), &d)) return std::string("dtype ") + c10::toString(x.scalar_type());
#ifdef LOCKSTEP_HAVE_CUDA
  if (!x.is_cpu() && !x.is_cuda()) return "device " + x.device().str();
#else
  if (!x.is_cpu()) return "device " + x.device().str() + " (this build has no CUDA)";
#endif
  if (!x.is_contiguous(channels_innermost(x.dim()))) return "the channels are not innermost (channels-last)";
  const int64_t c = x.size(1);
  if (c == 0 || c % kernel::vector_width(d) != 0)
    return std::to_string(c) + " channels, not a multiple of " + std::to_string(kernel::vector_width(d));
  if (x.numel() == 0) return "the input is empty";
  if (!aligned16(x)) return "the input is not 16-byte aligned";
  return "";
}

// max_pool_obstacle's checks and, where there is none, the geometry: computed once for both.
maxpool::Geometry plan(const at::Tensor& x, const PoolWindow& window, std::string* why) {
  *why = tensor_obstacle(x);
  return why->empty() ? geometry(x, window, why) : maxpool::Geometry{};
}

}  // namespace

std::string max_pool_obstacle(const at::Tensor& x, const PoolWindow& window) {
  std::string why;
  plan(x, window, &why);
  return why;
}

at::Tensor max_pool(const at::Tensor& x, const PoolWindow& window) {
  std::string why;
  const maxpool::Geometry g = plan(x, window, &why);
  LOCKSTEP_REQUIRE(why.empty(), "max_pool: " + why);
  return MaxPoolFunction::apply(x, g);
}

}  // namespace lockstep
