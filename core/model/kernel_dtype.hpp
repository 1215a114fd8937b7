// kernel_dtype: the element types lockstep's own kernels take (bn_act_kernels.hpp,
// max_pool_kernels.hpp), without torch's headers: the CUDA files include it too.
#pragma once

namespace lockstep::kernel {

enum class Dtype { kFloat, kHalf, kBFloat16 };
// Elements of DTYPE per 16-byte vector, the unit a thread loads: the channel count of a
// tensor the kernels take must be a multiple of it.
inline int vector_width(Dtype d) { return d == Dtype::kFloat ? 4 : 8; }

}  // namespace lockstep::kernel
