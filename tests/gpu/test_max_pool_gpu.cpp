// gpu_tests: lockstep's max-pool CUDA kernels (core/model/max_pool_kernels.cu) on a GPU. Each
// test prints "skipped: no GPU" and skips where torch sees none (CI).
//   - every case of the CPU unit test: the CUDA kernels == the CPU loops bit for bit (the same
//     rules and float32 arithmetic, max_pool_math.hpp), and == ATen's CUDA max-pool: values
//     bit for bit, 2-d gradients bit for bit (ATen's gather, in the same order), 3-d within
//     float rounding (ATen's 3-d backward adds atomically, in no fixed order);
//   - NaN and -inf windows, a batch x depth beyond the grid's z (the kernels' z loop), a
//     gradient at an odd offset: == the CPU loops, bit for bit;
//   - ResNet-18's stem at batch 32 (64 x 112² bf16): == ATen's, bit for bit;
//   - captured in a CUDA graph and replayed == eager, no host sync in the eager passes.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <string>

#include "core/model/max_pool.hpp"
#include "model/max_pool_check.hpp"
#include "skip_without_gpu.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

using namespace lockstep;
using namespace lockstep::testing;

TEST(MaxPoolGpu, KernelsEqualTheCpuLoopsAndAten) {
  SKIP_WITHOUT_GPU();
  for (const PoolCase& c : pool_cases()) {
    const std::string what = c.name + " " + std::string(c10::toString(c.dtype));
    const PoolResult gpu = run_pool(c, true, torch::kCUDA), cpu = run_pool(c, true);
    const PoolResult aten = run_pool(c, false, torch::kCUDA);
    EXPECT_TRUE(torch::equal(gpu.y, cpu.y)) << what;
    EXPECT_TRUE(torch::equal(gpu.dx, cpu.dx)) << what;
    EXPECT_TRUE(torch::equal(gpu.y, aten.y)) << what;
    if (c.shape.size() == 4) {
      EXPECT_TRUE(torch::equal(gpu.dx, aten.dx)) << what;
    } else {
      const double tol = c.dtype == torch::kFloat ? 1e-5 : 1e-2;
      EXPECT_TRUE(torch::allclose(gpu.dx.to(torch::kFloat), aten.dx.to(torch::kFloat), tol, tol)) << what;
    }
  }
}

namespace {

// Lockstep's max-pool of X with upstream gradient DY on DEVICE: (y, dx) back on the CPU.
PoolResult own_pool(const torch::Tensor& x, const torch::Tensor& dy, const PoolWindow& w, torch::Device device) {
  torch::Tensor in = x.to(device).requires_grad_(true);
  const torch::Tensor y = max_pool(in, w);
  y.backward(dy.to(device));
  return {y.detach().cpu(), in.grad().cpu()};
}

// Bit patterns equal (NaN payloads included), for 16- and 32-bit floats.
bool same_bits(const torch::Tensor& a, const torch::Tensor& b) {
  const auto as = a.element_size() == 4 ? torch::kInt : torch::kShort;
  return a.sizes() == b.sizes() && torch::equal(a.contiguous().view(as), b.contiguous().view(as));
}

}  // namespace

TEST(MaxPoolGpu, NaNMinusInfinityLargeBatchAndOddOffsetsAsTheCpuLoops) {
  SKIP_WITHOUT_GPU();
  const auto cl = c10::MemoryFormat::ChannelsLast;
  const PoolWindow stem{{3, 3}, {2, 2}, {1, 1}};
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    torch::manual_seed(6);
    torch::Tensor x = torch::randn({2, 8, 7, 7});
    x.index_put_({0, 1, 2, 3}, NAN);
    x.index_put_({0, 1, 3, 3}, NAN);
    x.index_put_({1, torch::indexing::Slice(), torch::indexing::Slice(0, 3), torch::indexing::Slice(0, 3)}, -INFINITY);
    x = x.to(dtype).contiguous(cl);
    const torch::Tensor dy = torch::randn({2, 8, 4, 4}).to(dtype).contiguous(cl);
    const PoolResult gpu = own_pool(x, dy, stem, torch::kCUDA), cpu = own_pool(x, dy, stem, torch::kCPU);
    EXPECT_TRUE(same_bits(gpu.y, cpu.y)) << c10::toString(dtype);
    EXPECT_TRUE(same_bits(gpu.dx, cpu.dx)) << c10::toString(dtype);
  }
  // batch x depth 66000 > 65535: some blocks run the z loop twice.
  torch::manual_seed(7);
  const torch::Tensor big = torch::randn({66000, 8, 3, 3}).to(torch::kBFloat16).contiguous(cl);
  const torch::Tensor big_dy = torch::randn({66000, 8, 2, 2}).to(torch::kBFloat16).contiguous(cl);
  const PoolWindow two{{2, 2}, {1, 1}, {0, 0}};
  const PoolResult gpu = own_pool(big, big_dy, two, torch::kCUDA), cpu = own_pool(big, big_dy, two, torch::kCPU);
  EXPECT_TRUE(same_bits(gpu.y, cpu.y));
  EXPECT_TRUE(same_bits(gpu.dx, cpu.dx));
  // The incoming gradient 4 bytes past a 16-byte boundary (the wrapper copies it aligned).
  const PoolCase c = pool_cases()[0];
  auto [x, dy] = pool_inputs(c);
  torch::Tensor base = torch::empty({dy.numel() + 1}, torch::TensorOptions().device(torch::kCUDA));
  torch::Tensor odd =
      base.narrow(0, 1, dy.numel()).view({dy.size(0), dy.size(2), dy.size(3), dy.size(1)}).permute({0, 3, 1, 2});
  odd.copy_(dy);
  ASSERT_NE(reinterpret_cast<uintptr_t>(odd.data_ptr()) % 16, 0u);
  torch::Tensor in = x.cuda().requires_grad_(true);
  max_pool(in, c.window).backward(odd);
  EXPECT_TRUE(same_bits(in.grad().cpu(), own_pool(x, dy, c.window, torch::kCPU).dx));
}

TEST(MaxPoolGpu, ResNet18StemEqualsAten) {
  SKIP_WITHOUT_GPU();
  torch::manual_seed(8);
  const auto cl = c10::MemoryFormat::ChannelsLast;
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  // After a ReLU: a third zeros, the rest on a coarse grid, so windows hold ties.
  torch::Tensor x = ((torch::randn({32, 64, 112, 112}, opts) * 2).round() / 2).clamp_min(0);
  x = x.to(torch::kBFloat16).contiguous(cl);
  const torch::Tensor dy = torch::randn({32, 64, 56, 56}, opts).to(torch::kBFloat16).contiguous(cl);
  const PoolWindow stem{{3, 3}, {2, 2}, {1, 1}};
  torch::Tensor a = x.clone().requires_grad_(true), b = x.to(torch::kFloat).requires_grad_(true);
  const torch::Tensor ya = max_pool(a, stem), yb = torch::max_pool2d(b, stem.kernel, stem.stride, stem.padding);
  ya.backward(dy);
  yb.backward(dy.to(torch::kFloat));
  EXPECT_TRUE(torch::equal(ya, yb.to(torch::kBFloat16)));
  EXPECT_TRUE(torch::equal(a.grad(), b.grad().to(torch::kBFloat16)));
}

#ifdef LOCKSTEP_HAVE_CUDA
TEST(MaxPoolGpu, CapturedPassesReplayTheEagerOnesWithoutHostSync) {
  SKIP_WITHOUT_GPU();
  const c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, 0);
  const c10::cuda::CUDAStreamGuard guard(stream);
  torch::manual_seed(4);
  const auto opts = torch::TensorOptions().device(torch::kCUDA);
  torch::Tensor x = torch::randn({8, 64, 4, 28, 28}, opts).to(torch::kBFloat16).contiguous(c10::MemoryFormat::ChannelsLast3d);
  x.requires_grad_(true);
  const torch::Tensor dy =
      torch::randn({8, 64, 4, 14, 14}, opts).to(torch::kBFloat16).contiguous(c10::MemoryFormat::ChannelsLast3d);
  const PoolWindow r3d_stem{{1, 3, 3}, {1, 2, 2}, {0, 1, 1}};
  torch::Tensor y, dx;
  const auto step = [&] {
    x.mutable_grad() = torch::Tensor();
    y = max_pool(x, r3d_stem);
    y.backward(dy);
    dx = x.grad();
  };
  step();
  {
    struct SyncIsError {
      SyncIsError() { c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR); }
      ~SyncIsError() { c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED); }
    } sync_is_error;
    step();
  }
  const torch::Tensor y0 = y.detach().clone(), dx0 = dx.clone();
  at::cuda::CUDAGraph graph;
  graph.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
  step();
  graph.capture_end();
  y.detach().zero_(), dx.zero_();
  graph.replay();
  c10::cuda::device_synchronize();
  EXPECT_TRUE(torch::equal(y, y0));
  EXPECT_TRUE(torch::equal(dx, dx0));
}
#endif
