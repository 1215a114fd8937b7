// core/model/layers: ReLU + max-pool in the cheap order (pool, then ReLU) is the same
// function with the same gradients as the textbook order, for 2-D and 3-D pools,
// with padding, and with windows whose maximum is negative or zero, through either
// max-pool implementation.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <utility>
#include <vector>

#include "core/model/layers.hpp"
#include "core/model/max_pool_layer.hpp"

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

// Through ATen's max-pool and, channels-last, lockstep's (max_pool_layer.hpp).
TEST(Layers, ReluMaxPoolIsTheTextbookOrder) {
  torch::manual_seed(5);
  torch::Tensor x = torch::randn({4, 4, 12, 12});
  x.index_put_({0}, -x.index({0}).abs());  // every window's maximum negative
  x.index_put_({1, 0, torch::indexing::Slice(0, 4)}, 0.0);  // windows of zeros and ties
  torch::Tensor v = torch::randn({2, 4, 4, 8, 8});
  v.index_put_({0}, -v.index({0}).abs());
  const std::vector<std::pair<torch::Tensor, PoolWindow>> cases{
      {x, {{2, 2}, {2, 2}, {0, 0}}},
      {x, {{3, 3}, {2, 2}, {1, 1}}},  // resnet's stem pool
      {v, {{2, 2, 2}, {2, 2, 2}, {0, 0, 0}}},
      {v, {{1, 3, 3}, {1, 2, 2}, {0, 1, 1}}},  // r3d's stem pool
  };
  for (const auto& [t, w] : cases) {
    const auto textbook = [&](const torch::Tensor& in) {
      return t.dim() == 4 ? F::max_pool2d(torch::relu(in), F::MaxPool2dFuncOptions({w.kernel[0], w.kernel[1]})
                                                               .stride({w.stride[0], w.stride[1]})
                                                               .padding({w.padding[0], w.padding[1]}))
                          : torch::max_pool3d(torch::relu(in), w.kernel, w.stride, w.padding);
    };
    for (const bool own : {false, true}) {
      MaxPool pool(w);
      pool->set_own(own);
      const torch::Tensor in = own ? t.contiguous(t.dim() == 4 ? c10::MemoryFormat::ChannelsLast
                                                                : c10::MemoryFormat::ChannelsLast3d)
                                   : t;
      expect_same(in, [&](auto a) { return relu_max_pool(a, *pool); }, textbook);
    }
  }
}
