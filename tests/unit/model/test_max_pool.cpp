// lockstep's max-pool (core/model/max_pool.hpp) on the CPU: the rules its CUDA kernels run
// (max_pool_math.hpp) as loops, against ATen's max_pool2d / max_pool3d — values and input
// gradients bit for bit, ties, NaN and -inf included — then as a layer (max_pool_layer.hpp)
// inside the built-in models, and its refusals.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <sstream>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/model/max_pool.hpp"
#include "core/model/max_pool_layer.hpp"
#include "core/model/memory_format.hpp"
#include "core/model/registry.hpp"
#include "core/model/sync_bn.hpp"
#include "model/max_pool_check.hpp"

using namespace lockstep;
using namespace lockstep::testing;

// ATen's float32 results, rounded once to the case's dtype: the same bits.
TEST(MaxPool, EqualsAtenBitForBit) {
  for (const PoolCase& c : pool_cases()) {
    const PoolResult own = run_pool(c, true), aten = run_pool(c, false);
    const std::string what = c.name + " " + std::string(c10::toString(c.dtype));
    ASSERT_EQ(own.y.sizes(), aten.y.sizes()) << what;
    EXPECT_TRUE(torch::equal(own.y, aten.y)) << what;
    EXPECT_TRUE(torch::equal(own.dx, aten.dx)) << what;
    EXPECT_GT(own.dx.ne(0).sum().item<int64_t>(), 0) << what;  // gradients arrived
  }
}

TEST(MaxPool, OutputIsChannelsLastAndResultsDoNotDependOnTheThreadCount) {
  const PoolCase c = pool_cases()[3];  // overlapping windows: several gradients per value
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const PoolResult one = run_pool(c, true);
  at::set_num_threads(std::max(2, threads));
  const PoolResult many = run_pool(c, true);
  at::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(one.y, many.y));
  EXPECT_TRUE(torch::equal(one.dx, many.dx));
  auto [x, dy] = pool_inputs(c);
  EXPECT_TRUE(max_pool(x, c.window).is_contiguous(c10::MemoryFormat::ChannelsLast));
}

// NaN wins its window (the last NaN takes the gradient); a window of -inf sends its gradient
// to its first valid value: ATen's CPU rules.
TEST(MaxPool, NaNAndMinusInfinityAsAten) {
  torch::Tensor x = torch::randn({2, 4, 7, 7});
  x.index_put_({0, 1, 2, 3}, NAN);
  x.index_put_({0, 1, 3, 3}, NAN);
  x.index_put_({1, 2, 0, 0}, NAN);
  x.index_put_({1, torch::indexing::Slice(), torch::indexing::Slice(0, 3), torch::indexing::Slice(0, 3)}, -INFINITY);
  x = x.contiguous(c10::MemoryFormat::ChannelsLast);
  const torch::Tensor dy = torch::randn({2, 4, 4, 4}).contiguous(c10::MemoryFormat::ChannelsLast);
  const PoolWindow w{{3, 3}, {2, 2}, {1, 1}};
  torch::Tensor a = x.clone().requires_grad_(true), b = x.clone().requires_grad_(true);
  const torch::Tensor ya = max_pool(a, w), yb = torch::max_pool2d(b, w.kernel, w.stride, w.padding);
  ya.backward(dy);
  yb.backward(dy);
  EXPECT_GT(ya.isnan().sum().item<int64_t>(), 0);
  EXPECT_TRUE(torch::equal(ya.contiguous().view(torch::kInt), yb.contiguous().view(torch::kInt)));  // bits, NaN too
  EXPECT_TRUE(torch::equal(a.grad(), b.grad()));
}

// The kernels' dx has no graph: a second derivative is refused, not silently zero.
TEST(MaxPool, RefusesASecondDerivative) {
  const torch::Tensor x = torch::randn({2, 8, 6, 6}).contiguous(c10::MemoryFormat::ChannelsLast).requires_grad_(true);
  const torch::Tensor y = max_pool(x, {{2, 2}, {2, 2}, {0, 0}});
  try {
    torch::autograd::grad({y.sum()}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true);
    ADD_FAILURE() << "a second derivative was not refused";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("no second derivative"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(torch::equal(torch::autograd::grad({y.sum()}, {x})[0].sum(), torch::tensor(144.0f)));
}

TEST(MaxPool, TakesAGradientAtAnyOffset) {
  const PoolCase c = pool_cases()[0];
  auto [x, dy] = pool_inputs(c);
  torch::Tensor a = x.clone().requires_grad_(true), b = x.clone().requires_grad_(true);
  // The same gradient values, 4 bytes past a 16-byte boundary, still channels-last.
  torch::Tensor base = torch::empty({dy.numel() + 1});
  torch::Tensor odd = base.narrow(0, 1, dy.numel())
                          .view({dy.size(0), dy.size(2), dy.size(3), dy.size(1)})
                          .permute({0, 3, 1, 2});
  odd.copy_(dy);
  ASSERT_NE(reinterpret_cast<uintptr_t>(odd.data_ptr()) % 16, 0u);
  max_pool(a, c.window).backward(odd);
  max_pool(b, c.window).backward(dy);
  EXPECT_TRUE(torch::equal(a.grad(), b.grad()));
}

TEST(MaxPool, RefusesWhatItCannotTake) {
  const auto cl = c10::MemoryFormat::ChannelsLast;
  const torch::Tensor x = torch::randn({2, 8, 9, 9}).contiguous(cl);
  const PoolWindow stem{{3, 3}, {2, 2}, {1, 1}};
  EXPECT_EQ(max_pool_obstacle(x, stem), "");
  EXPECT_EQ(max_pool_obstacle(torch::randn({2, 8, 9, 9}), stem), "the channels are not innermost (channels-last)");
  EXPECT_EQ(max_pool_obstacle(torch::randn({2, 6, 9, 9}).contiguous(cl), stem), "6 channels, not a multiple of 4");
  EXPECT_EQ(max_pool_obstacle(torch::randn({2, 4, 9, 9}).to(torch::kBFloat16).contiguous(cl), stem),
            "4 channels, not a multiple of 8");
  EXPECT_EQ(max_pool_obstacle(x.to(torch::kDouble), stem), "dtype Double");
  EXPECT_EQ(max_pool_obstacle(x, {{3, 3}, {2, 2}, {2, 2}}),
            "kernel, stride or padding out of range (padding at most half the kernel)");
  EXPECT_EQ(max_pool_obstacle(x, {{3, 3}, {int64_t{1} << 32, 2}, {1, 1}}),
            "kernel, stride or padding out of range (padding at most half the kernel)");
  EXPECT_EQ(max_pool_obstacle(x, {{10, 10}, {1, 1}, {0, 0}}), "the input is smaller than the window");
  EXPECT_EQ(max_pool_obstacle(x, {{17, 17}, {1, 1}, {8, 8}}), "a window of 289 positions (at most 256)");
  EXPECT_EQ(max_pool_obstacle(x, {{2, 2, 2}, {2, 2, 2}, {0, 0, 0}}),
            "the window is not 2-d over a 4-d input or 3-d over a 5-d input");
  EXPECT_EQ(max_pool_obstacle(torch::randn({2, 8, 9}), stem), "the input is not 4- or 5-d");
  EXPECT_THROW(max_pool(torch::randn({2, 8, 9, 9}), stem), Error);
}

// The layer: lockstep's kernels only in training with set_own(true) where they apply, ATen's
// otherwise, the report naming the first that did not run them; never in a checkpoint.
TEST(MaxPool, LayerRunsItsKernelsOnlyWhereAsked) {
  MaxPool pool(PoolWindow{{3, 3}, {2, 2}, {1, 1}});
  const torch::Tensor cl = torch::randn({2, 8, 9, 9}).contiguous(c10::MemoryFormat::ChannelsLast);
  const torch::Tensor aten = torch::max_pool2d(cl, {3, 3}, {2, 2}, {1, 1});
  EXPECT_TRUE(torch::equal(pool->forward(cl), aten));
  EXPECT_EQ(max_pool_report(*pool), "lockstep max-pool: 0 of 0 max-pool layer(s) ran lockstep's kernels");
  EXPECT_EQ(set_max_pool_kernel(*pool, true), 1);
  EXPECT_TRUE(torch::equal(pool->forward(cl), aten));
  EXPECT_EQ(max_pool_report(*pool), "lockstep max-pool: 1 of 1 max-pool layer(s) ran lockstep's kernels");
  MaxPool nchw(PoolWindow{{2, 2}});
  nchw->set_own(true);
  EXPECT_TRUE(torch::equal(nchw->forward(cl.contiguous()), torch::max_pool2d(cl.contiguous(), {2, 2})));
  EXPECT_EQ(max_pool_report(*nchw),
            "lockstep max-pool: 0 of 1 max-pool layer(s) ran lockstep's kernels; not : the channels are not innermost "
            "(channels-last)");
  EXPECT_FALSE(pool->is_serializable());
  io::DatasetSpec spec;
  spec.name = "t", spec.sample_shape = {1, 12, 12}, spec.num_classes = 4;
  auto net = make_model(ModelOptions{"cnn", 0.0, 8, 18, false}, spec);
  EXPECT_EQ(set_max_pool_kernel(*net, true), 2);
  torch::serialize::OutputArchive out;
  net->save(out);
  std::stringstream bytes;
  out.save_to(bytes);
  torch::serialize::InputArchive in;
  in.load_from(bytes);
  for (const std::string& key : in.keys()) EXPECT_EQ(key.find("pool"), std::string::npos) << key;
}

// Whole models from the same weights over 3 SGD steps, float32: lockstep's max-pool == ATen's
// bit for bit (losses, every gradient, BatchNorm estimates), with BatchNorm+ReLU fused or not,
// and with activation checkpointing (c3d's pools run inside its recomputed blocks). resnet
// and r3d above 64 pixels a side, where their stems pool. (Ties are EqualsAtenBitForBit's:
// here the pooled values are continuous.)
TEST(MaxPool, ModelsTrainTheSameWithEitherKernel) {
  struct Setup {
    std::string name;
    int depth;
    std::vector<int64_t> shape;
    int pools;
  };
  struct Trace {
    std::vector<double> losses;
    std::vector<torch::Tensor> state;
  };
  for (const Setup& s : {Setup{"resnet", 18, {3, 72, 72}, 1}, Setup{"r3d", 10, {1, 2, 72, 72}, 1},
                         Setup{"cnn", 18, {1, 12, 12}, 2}, Setup{"c3d", 18, {1, 8, 16, 16}, 3}}) {
    const auto train = [&](bool own, bool fused, bool checkpoint) {
      torch::manual_seed(3);
      io::DatasetSpec spec;
      spec.name = "t", spec.sample_shape = s.shape, spec.num_classes = 4;
      auto net = make_model(ModelOptions{s.name, 0.0, 8, s.depth, checkpoint}, spec);
      use_channels_last(*net);
      EXPECT_EQ(set_max_pool_kernel(*net, own), s.pools) << s.name;
      set_fused_bn(*net, fused);
      net->train();
      torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1));
      Trace t;
      for (int step = 0; step < 3; ++step) {
        torch::manual_seed(20 + step);
        std::vector<int64_t> batch{4};
        batch.insert(batch.end(), s.shape.begin(), s.shape.end());
        const torch::Tensor x = torch::randn(batch), y = torch::tensor({0, 1, 2, 3});
        opt.zero_grad();
        const torch::Tensor loss = torch::nn::functional::cross_entropy(net->forward(x), y);
        loss.backward();
        if (step == 0 && own)
          EXPECT_EQ(max_pool_report(*net), "lockstep max-pool: " + std::to_string(s.pools) + " of " +
                                               std::to_string(s.pools) + " max-pool layer(s) ran lockstep's kernels");
        if (step == 0)
          for (const auto& p : net->parameters()) t.state.push_back(p.grad().clone());
        opt.step();
        t.losses.push_back(loss.item<double>());
      }
      for (const auto& b : net->named_buffers()) t.state.push_back(b.value().clone());
      for (const auto& p : net->parameters()) t.state.push_back(p.detach().clone());
      return t;
    };
    const auto same = [&](const Trace& a, const Trace& b, const std::string& what) {
      EXPECT_EQ(a.losses, b.losses) << s.name << what;
      ASSERT_EQ(a.state.size(), b.state.size());
      for (size_t i = 0; i < a.state.size(); ++i) EXPECT_TRUE(torch::equal(a.state[i], b.state[i])) << s.name << what << " tensor " << i;
    };
    for (const bool fused : {false, true}) same(train(true, fused, false), train(false, fused, false), fused ? " fused" : "");
    if (s.name != "cnn") same(train(true, false, true), train(false, false, true), " checkpointed");
  }
}
