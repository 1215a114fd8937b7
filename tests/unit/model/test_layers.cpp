// core/model/layers: ReLU + max-pool in the cheap order (pool, then ReLU) is the same
// function with the same gradients as the textbook order, for 2-D and 3-D pools,
// with padding, and with windows whose maximum is negative or zero.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "core/model/layers.hpp"

using namespace lockstep;
namespace F = torch::nn::functional;

namespace {

// Values and input gradients of FAST(x) and REFERENCE(x) under one random upstream gradient.
template <typename Fast, typename Reference>
void expect_same(torch::Tensor x, Fast fast, Reference reference) {
  torch::Tensor a = x.clone().requires_grad_(true);
  torch::Tensor b = x.clone().requires_grad_(true);
  torch::Tensor ya = fast(a);
  torch::Tensor yb = reference(b);
  ASSERT_TRUE(torch::equal(ya, yb));
  torch::Tensor g = torch::randn_like(ya);
  ya.backward(g);
  yb.backward(g);
  EXPECT_TRUE(torch::equal(a.grad(), b.grad()));
}

}  // namespace

TEST(Layers, ReluMaxPoolIsTheTextbookOrder) {
  torch::manual_seed(5);
  torch::Tensor x = torch::randn({4, 3, 12, 12});
  x.index_put_({0}, -x.index({0}).abs());  // every window's maximum negative
  x.index_put_({1, 0, torch::indexing::Slice(0, 4)}, 0.0);  // windows of zeros and ties
  const auto p2 = F::MaxPool2dFuncOptions(2);
  expect_same(x, [&](auto t) { return relu_max_pool2d(t, p2); },
              [&](auto t) { return F::max_pool2d(torch::relu(t), p2); });
  const auto stem = F::MaxPool2dFuncOptions(3).stride(2).padding(1);  // resnet's stem pool
  expect_same(x, [&](auto t) { return relu_max_pool2d(t, stem); },
              [&](auto t) { return F::max_pool2d(torch::relu(t), stem); });
  expect_same(x.contiguous(torch::MemoryFormat::ChannelsLast), [&](auto t) { return relu_max_pool2d(t, p2); },
              [&](auto t) { return F::max_pool2d(torch::relu(t), p2); });

  torch::Tensor v = torch::randn({2, 3, 4, 8, 8});
  v.index_put_({0}, -v.index({0}).abs());
  const auto p3 = F::MaxPool3dFuncOptions({2, 2, 2});
  expect_same(v, [&](auto t) { return relu_max_pool3d(t, p3); },
              [&](auto t) { return F::max_pool3d(torch::relu(t), p3); });
  const auto r3d_stem = F::MaxPool3dFuncOptions({1, 3, 3}).stride({1, 2, 2}).padding({0, 1, 1});
  expect_same(v, [&](auto t) { return relu_max_pool3d(t, r3d_stem); },
              [&](auto t) { return F::max_pool3d(torch::relu(t), r3d_stem); });
}
