// kernel_tensor: what the wrappers of lockstep's own kernels (bn_act.cpp, max_pool.cpp) ask
// of a tensor before handing its memory over: its element type as the kernels' Dtype, the
// channels-innermost memory format of its rank, its alignment.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "core/model/kernel_dtype.hpp"

namespace lockstep::kernel {

// The channels-innermost layout of an N-d [N, C, ...] tensor: channels-last for 4-d,
// channels-last-3d for 5-d, contiguous [N, C] for 2-d.
inline c10::MemoryFormat channels_innermost(int64_t dim) {
  return dim == 4 ? c10::MemoryFormat::ChannelsLast
                  : dim == 5 ? c10::MemoryFormat::ChannelsLast3d : c10::MemoryFormat::Contiguous;
}

// False where the kernels have no Dtype for T.
inline bool dtype_of(at::ScalarType t, Dtype* d) {
  switch (t) {
    case at::kFloat: *d = Dtype::kFloat; return true;
    case at::kHalf: *d = Dtype::kHalf; return true;
    case at::kBFloat16: *d = Dtype::kBFloat16; return true;
    default: return false;
  }
}

// The kernels' 16-byte vector loads need it.
inline bool aligned16(const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0; }

}  // namespace lockstep::kernel
