// kernel_dtype: the element types lockstep's own kernels take (bn_act_kernels.hpp,
// max_pool_kernels.hpp), without torch's headers: the CUDA files include it too.
#pragma once

namespace lockstep::kernel {

enum class Dtype { kFloat, kHalf, kBFloat16 };
// Elements of DTYPE per 16-byte vector, the unit a thread loads: the channel count of a
// tensor the kernels take must be a multiple of it.
inline int vector_width(Dtype d) { return d == Dtype::kFloat ? 4 : 8; }

template <typename T>
struct Element {
  using type = T;
};
// F(Element<T>{}) with T the element type of D among FLOAT, HALF and BFLOAT16: c10's types
// in the CPU loops, cuda_fp16/cuda_bf16's in the CUDA kernels. Returns what F returns.
template <typename Float, typename Half, typename BFloat16, typename F>
auto with_element(Dtype d, const F& f) {
  switch (d) {
    case Dtype::kHalf: return f(Element<Half>{});
    case Dtype::kBFloat16: return f(Element<BFloat16>{});
    case Dtype::kFloat: break;
  }
  return f(Element<Float>{});
}

}  // namespace lockstep::kernel
