// max_pool_check: lockstep's max-pool (core/model/max_pool.hpp) and ATen's from the same
// inputs — shared by the CPU unit test (tests/unit/model/test_max_pool.cpp) and the GPU test
// (tests/gpu/test_max_pool_gpu.cpp).
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "core/model/max_pool.hpp"

namespace lockstep::testing {

struct PoolCase {
  std::string name;
  std::vector<int64_t> shape;  // [N, C, H, W] or [N, C, D, H, W]
  PoolWindow window;           // stride and padding given
  torch::ScalarType dtype;
};

struct PoolResult {
  torch::Tensor y, dx;
};

// The cases both tests run: ResNet-18's and R3D's stems, the reference CNN's and C3D's pools,
// overlapping windows (several gradients per input value, summed in order), sizes the
// windows do not divide (edge windows clipped; inputs no window covers), each dtype.
inline std::vector<PoolCase> pool_cases() {
  std::vector<PoolCase> cases;
  for (const auto dtype : {torch::kFloat, torch::kBFloat16, torch::kHalf}) {
    cases.push_back({"resnet stem", {2, 8, 13, 11}, {{3, 3}, {2, 2}, {1, 1}}, dtype});
    cases.push_back({"cnn pool", {3, 16, 8, 8}, {{2, 2}, {2, 2}, {0, 0}}, dtype});
    cases.push_back({"uncovered edge", {2, 8, 9, 7}, {{2, 2}, {2, 2}, {0, 0}}, dtype});
    cases.push_back({"overlapping 3x3", {2, 8, 7, 6}, {{3, 3}, {1, 1}, {1, 1}}, dtype});
    cases.push_back({"r3d stem", {2, 8, 3, 9, 9}, {{1, 3, 3}, {1, 2, 2}, {0, 1, 1}}, dtype});
    cases.push_back({"c3d pool", {2, 8, 4, 6, 6}, {{2, 2, 2}, {2, 2, 2}, {0, 0, 0}}, dtype});
    cases.push_back({"overlapping 3x3x3", {1, 8, 4, 5, 5}, {{3, 3, 3}, {1, 1, 1}, {1, 1, 1}}, dtype});
  }
  return cases;
}

inline c10::MemoryFormat pool_layout(size_t dims) {
  return dims == 4 ? c10::MemoryFormat::ChannelsLast : c10::MemoryFormat::ChannelsLast3d;
}

// The input and upstream gradient of C, made on the CPU: values on a 0.5 grid with a third
// of them 0 (what a ReLU leaves), so that windows hold ties, which both must break alike.
inline std::pair<torch::Tensor, torch::Tensor> pool_inputs(const PoolCase& c) {
  torch::manual_seed(17);
  torch::Tensor x = (torch::randn(c.shape) * 2).round() / 2;
  x = torch::where(torch::rand(c.shape) < 0.33, torch::zeros_like(x), x);
  const PoolWindow& w = c.window;
  torch::Tensor y = c.shape.size() == 4 ? torch::max_pool2d(x, w.kernel, w.stride, w.padding)
                                        : torch::max_pool3d(x, w.kernel, w.stride, w.padding);
  torch::Tensor dy = torch::randn(y.sizes());
  const auto layout = pool_layout(c.shape.size());
  return {x.to(c.dtype).contiguous(layout), dy.to(c.dtype).contiguous(layout)};
}

// One forward and backward of C's inputs on DEVICE: lockstep's (OWN) or ATen's. ATen's runs
// in float32 on the upcast inputs, its results rounded to C's dtype once: what lockstep's
// float32 arithmetic should give bit for bit (ATen's own bf16/fp16 backward may round each
// addition). Results come back to the CPU in C's dtype.
inline PoolResult run_pool(const PoolCase& c, bool own, torch::Device device = torch::kCPU) {
  auto [x, dy] = pool_inputs(c);
  x = x.to(device), dy = dy.to(device);
  if (!own) x = x.to(torch::kFloat), dy = dy.to(torch::kFloat);
  x.requires_grad_(true);
  const PoolWindow& w = c.window;
  torch::Tensor y = own ? max_pool(x, w)
                        : c.shape.size() == 4 ? torch::max_pool2d(x, w.kernel, w.stride, w.padding)
                                              : torch::max_pool3d(x, w.kernel, w.stride, w.padding);
  y.backward(dy);
  return {y.detach().to(torch::kCPU, c.dtype), x.grad().to(torch::kCPU, c.dtype)};
}

}  // namespace lockstep::testing
