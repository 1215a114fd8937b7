// gpu_tests: the fused BatchNorm (+ residual) + ReLU's CUDA kernels (core/model/bn_act_kernels.cu)
// on a GPU. Each test prints "skipped: no GPU" and skips where torch sees none (CI).
//   - every result against ATen's float64 batch_norm + add + relu, as the CPU unit test does
//     for the CPU loops: ResNet-18's and R3D's shapes, channels that leave threads idle,
//     bf16 / fp16 / fp32, with and without the residual; a gradient at an odd offset;
//   - the passes captured in a CUDA graph and replayed == eager, no host sync in the eager
//     steady state (c10's sync debug mode as an error);
//   - ResNet-18 trains the same fused (its 17 BatchNorm+ReLU nodes) and unfused (float32
//     without TF32: within float rounding; bf16 autocast: gradients as close to float32's as
//     ATen's bf16 ones).
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <vector>

#include "core/model/bn_act.hpp"
#include "core/model/memory_format.hpp"
#include "core/model/registry.hpp"
#include "core/model/sync_bn.hpp"
#include "core/optim/amp.hpp"
#include "model/bn_act_check.hpp"
#include "skip_without_gpu.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

using namespace lockstep;
using namespace lockstep::testing;

TEST(BnActGpu, KernelsEqualAtenBatchNormAddRelu) {
  SKIP_WITHOUT_GPU();
  // ResNet-18's stem and stages at batch 16, R3D's 5-d, a [N, C] batch, odd row counts,
  // and channel counts whose vectors do not fill the block's 32 lanes (96 bf16: 12 of 16;
  // 36 float: 9 of 16) or span several blocks (1024 float: 256 vectors).
  const std::vector<std::vector<int64_t>> shapes{{16, 64, 56, 56}, {16, 128, 28, 28}, {32, 512, 7, 7},
                                                 {4, 64, 4, 14, 14}, {256, 512}, {3, 96, 5, 7}, {7, 36, 3, 3},
                                                 {5, 1024, 3, 3}};
  for (const auto& shape : shapes)
    for (const auto dtype : {torch::kBFloat16, torch::kHalf, torch::kFloat}) {
      if (shape[1] % (dtype == torch::kFloat ? 4 : 8) != 0) continue;
      for (const bool residual : {false, true}) {
        const Case c{shape, dtype, residual};
        expect_matches(c, run(c, true, torch::kCUDA), run(c, false));
      }
    }
  // The kernels read the incoming gradient 16 bytes at a time: one at an odd offset is copied.
  bool odd = false, even = true;
  EXPECT_TRUE(torch::equal(grad_at_offset(true, torch::kCUDA, &odd), grad_at_offset(false, torch::kCUDA, &even)));
  EXPECT_TRUE(odd) << "the sliced gradient should arrive misaligned";
  EXPECT_FALSE(even);
}

#ifdef LOCKSTEP_HAVE_CUDA
TEST(BnActGpu, CapturedPassesReplayTheEagerOnesWithoutHostSync) {
  SKIP_WITHOUT_GPU();
  const c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, 0);
  const c10::cuda::CUDAStreamGuard guard(stream);
  torch::manual_seed(4);
  const auto cl = c10::MemoryFormat::ChannelsLast;
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  torch::Tensor x = torch::randn({16, 64, 28, 28}, opts).to(torch::kBFloat16).contiguous(cl).requires_grad_(true);
  torch::Tensor r = torch::randn({16, 64, 28, 28}, opts).to(torch::kBFloat16).contiguous(cl).requires_grad_(true);
  const torch::Tensor dy = torch::randn({16, 64, 28, 28}, opts).to(torch::kBFloat16).contiguous(cl);
  torch::Tensor w = (torch::rand({64}, opts) + 0.5).requires_grad_(true), b = torch::zeros({64}, opts).requires_grad_(true);
  torch::Tensor rm = torch::zeros({64}, opts), rv = torch::ones({64}, opts);
  torch::Tensor y, dx, dr, dw;
  const auto step = [&] {
    for (torch::Tensor* t : {&x, &r, &w, &b}) t->mutable_grad() = torch::Tensor();
    y = bn_act({x, r, w, b, rm, rv, 0.1, 1e-5});
    y.backward(dy);
    dx = x.grad(), dr = r.grad(), dw = w.grad();
  };
  step();  // warm-up: the multiprocessor count is asked once
  {
    // Any host sync in the eager passes is an error (and the mode is off again on the way out).
    struct SyncIsError {
      SyncIsError() { c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR); }
      ~SyncIsError() { c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED); }
    } sync_is_error;
    step();
  }
  const torch::Tensor y0 = y.detach().clone(), dx0 = dx.clone(), dr0 = dr.clone(), dw0 = dw.clone();
  const torch::Tensor rv_before = rv.clone();
  at::cuda::CUDAGraph graph;
  graph.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);  // as the trainer's step (static_step.cpp)
  step();
  graph.capture_end();
  rv.copy_(rv_before);
  graph.replay();
  c10::cuda::device_synchronize();
  EXPECT_TRUE(torch::equal(y, y0));
  EXPECT_TRUE(torch::equal(dx, dx0));
  EXPECT_TRUE(torch::equal(dr, dr0));
  EXPECT_TRUE(torch::equal(dw, dw0));
  // The replay updated the running variance once more, from the same batch.
  EXPECT_FALSE(torch::equal(rv, rv_before));
}
#endif

TEST(BnActGpu, ResNet18TrainsTheSameFusedAndUnfused) {
  SKIP_WITHOUT_GPU();
  struct Trace {
    std::vector<double> losses;
    torch::Tensor first_grads;
  };
  io::DatasetSpec spec;
  spec.name = "t", spec.sample_shape = {3, 72, 72}, spec.num_classes = 10;  // over 64: the 7x7 stem and its max-pool
  const auto train = [&](bool fuse, bool bf16) {
    torch::manual_seed(3);
    auto net = make_model(ModelOptions{"resnet", 0.0, 0, 18}, spec);
    use_channels_last(*net);
    set_fused_bn(*net, fuse);
    net->to(torch::kCUDA);
    net->train();
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05));
    Trace t;
    for (int step = 0; step < 3; ++step) {
      torch::manual_seed(20 + step);
      const torch::Tensor x = torch::randn({32, 3, 72, 72}).to(torch::kCUDA);
      const torch::Tensor y = torch::randint(10, {32}, torch::kLong).to(torch::kCUDA);
      opt.zero_grad();
      torch::Tensor loss;
      {
        AutocastGuard autocast(bf16 ? Amp::kBf16 : Amp::kNone, torch::kCUDA);
        loss = torch::nn::functional::cross_entropy(net->forward(x), y);
      }
      if (step == 0) EXPECT_EQ(fused_nodes(loss), fuse ? 17 : 0) << (bf16 ? "bf16" : "float32");
      loss.backward();
      if (step == 0) {
        std::vector<torch::Tensor> g;
        for (const auto& p : net->parameters()) g.push_back(p.grad().flatten().to(torch::kDouble).cpu());
        t.first_grads = torch::cat(g);
      }
      opt.step();
      t.losses.push_back(loss.item<double>());
    }
    return t;
  };
  const auto error = [](const Trace& a, const Trace& ref) {
    return ((a.first_grads - ref.first_grads).norm() / ref.first_grads.norm()).item<double>();
  };
  const Trace plain = train(false, false), fused = train(true, false);
  // Step 0 from the same weights; steps 1-2 after updates from gradients 1e-6 apart.
  for (size_t i = 0; i < plain.losses.size(); ++i)
    EXPECT_NEAR(fused.losses[i], plain.losses[i], (i == 0 ? 1e-4 : 1e-3) * (1 + plain.losses[i])) << "float32, step " << i;
  EXPECT_LT(error(fused, plain), 1e-4);
  const Trace plain16 = train(false, true), fused16 = train(true, true);
  EXPECT_LT(error(fused16, plain), 1.25 * error(plain16, plain) + 1e-3)
      << "bf16: ATen's bf16 gradients are " << error(plain16, plain) << " off float32's";
  EXPECT_NEAR(fused16.losses[0], plain16.losses[0], 2e-2);
}
