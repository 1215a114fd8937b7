// max_pool: max-pooling of channels-last activations as one autograd node whose argmax is
// kept as one byte per value (max_pool_kernels.hpp): CUDA kernels on a GPU, the same rules as
// CPU loops on the CPU. The same values as ATen's max_pool2d / max_pool3d and the gradients
// of its float32 arithmetic, bit for bit (the exceptions: max_pool_kernels.hpp;
// tests/unit/model/test_max_pool.cpp; on a GPU tests/gpu/test_max_pool_gpu.cpp).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace lockstep {

// A max-pool's window over the spatial dimensions (2 or 3 of them); padding 0 where empty.
struct PoolWindow {
  std::vector<int64_t> kernel, stride, padding;
};

// Why max_pool cannot take X with WINDOW ("" when it can): the layout (channels-last 4-d or
// channels-last-3d 5-d, dense), the dtype (float32, float16, bfloat16), C a multiple of the
// 16-byte vector (4 or 8), a window of at most 256 positions with padding at most half of it
// and at least one output, 16-byte aligned data, a CPU or (built with CUDA) a CUDA device.
std::string max_pool_obstacle(const at::Tensor& x, const PoolWindow& window);

// max_pool2d / max_pool3d (dilation 1, ceil_mode false) of X; differentiable in X. The output
// is channels-last. Throws Error where max_pool_obstacle is not empty.
at::Tensor max_pool(const at::Tensor& x, const PoolWindow& window);

}  // namespace lockstep
