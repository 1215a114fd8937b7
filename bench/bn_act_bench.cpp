// bn_act_bench: lockstep's own kernels against ATen's, forward and backward, on ResNet-18's
// training shapes (224x224 input, channels-last): the fused BatchNorm (+ residual) + ReLU
// (core/model/bn_act, --model.fused-bn) against batch_norm + [add] + relu per shape, then
// summed over ResNet-18's 17 BatchNorm+ReLU layers per step, and the stem's max-pool
// (core/model/max_pool, --model.max-pool) against max_pool2d — the milliseconds of each, their
// ratio, and the time lockstep's kernels would save a step. On a GPU: CUDA events around REPS iterations after warm-up. On the
// CPU (--device cpu, a small batch): the same code path, a smoke run (bench/gpu.sh probe runs it
// on the GPU; tests/gpu/bench_smoke.sh on the CPU).
//
//   bn_act_bench [--device cuda|cpu] [--batch 256] [--dtype bf16|fp16|fp32] [--reps 20]
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/model/bn_act.hpp"
#include "core/model/max_pool.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#endif

using namespace lockstep;

namespace {

struct Layer {
  int64_t channels, side;
  bool residual;
  int count;  // how many of ResNet-18's BatchNorm+ReLU layers have this shape
};

// Milliseconds per forward + backward of F: the mean of REPS runs after 3 warm-ups.
template <typename F>
double time_ms(const F& f, torch::Device device, int reps) {
  for (int i = 0; i < 3; ++i) f();
#ifdef LOCKSTEP_HAVE_CUDA
  if (device.is_cuda()) {
    at::cuda::CUDAEvent start(cudaEventDefault), stop(cudaEventDefault);  // (the default flags disable timing)
    start.record();
    for (int i = 0; i < reps; ++i) f();
    stop.record();
    stop.synchronize();
    return start.elapsed_time(stop) / reps;
  }
#endif
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_name = torch::cuda::is_available() ? "cuda" : "cpu", dtype_name = "bf16";
  int64_t batch = 256;
  int reps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--device") device_name = v;
    else if (a == "--batch") batch = std::atoll(v.c_str());
    else if (a == "--dtype") dtype_name = v;
    else if (a == "--reps") reps = std::atoi(v.c_str());
    else { std::fprintf(stderr, "bn_act_bench: unknown option %s\n", a.c_str()); return 2; }
  }
  const torch::Device device(device_name);
  const torch::ScalarType dtype = dtype_name == "fp32" ? torch::kFloat : dtype_name == "fp16" ? torch::kHalf : torch::kBFloat16;
  // ResNet-18 at 224x224: the stem (112², after the 7x7 conv), then per stage two blocks of
  // conv-BN-ReLU and conv-BN-(+shortcut)-ReLU.
  const std::vector<Layer> layers{{64, 112, false, 1},  {64, 56, false, 2},  {64, 56, true, 2},
                                  {128, 28, false, 2}, {128, 28, true, 2}, {256, 14, false, 2},
                                  {256, 14, true, 2},  {512, 7, false, 2},  {512, 7, true, 2}};
  std::printf("bn_act_bench: %s, %s, batch %lld, channels-last, forward + backward, ms\n", device.str().c_str(),
              dtype_name.c_str(), static_cast<long long>(batch));
  std::printf("%-22s %9s %9s %7s\n", "shape", "aten", "fused", "ratio");
  double aten_step = 0, fused_step = 0;
  for (const Layer& l : layers) {
    const auto o = torch::TensorOptions().device(device);
    const auto cl = c10::MemoryFormat::ChannelsLast;
    torch::Tensor x = torch::randn({batch, l.channels, l.side, l.side}, o).to(dtype).contiguous(cl).requires_grad_(true);
    torch::Tensor r = torch::randn({batch, l.channels, l.side, l.side}, o).to(dtype).contiguous(cl).requires_grad_(true);
    const torch::Tensor dy = torch::randn({batch, l.channels, l.side, l.side}, o).to(dtype).contiguous(cl);
    torch::Tensor w = torch::ones({l.channels}, o).requires_grad_(true), b = torch::zeros({l.channels}, o).requires_grad_(true);
    torch::Tensor rm = torch::zeros({l.channels}, o), rv = torch::ones({l.channels}, o);
    const torch::Tensor res = l.residual ? r : torch::Tensor();
    const auto clear = [&] {
      for (torch::Tensor* t : {&x, &r, &w, &b}) t->mutable_grad() = torch::Tensor();
    };
    const double aten = time_ms(
        [&] {
          clear();
          torch::Tensor z = torch::batch_norm(x, w, b, rm, rv, true, 0.1, 1e-5, true);
          torch::relu_(l.residual ? z.add_(r) : z).backward(dy);
        },
        device, reps);
    const double fused = time_ms(
        [&] {
          clear();
          bn_act({x, res, w, b, rm, rv, 0.1, 1e-5}).backward(dy);
        },
        device, reps);
    const std::string shape = std::to_string(l.channels) + "x" + std::to_string(l.side) + "²" + (l.residual ? " +res" : "");
    std::printf("%-22s %9.3f %9.3f %6.2fx  (x%d per step)\n", shape.c_str(), aten, fused, aten / fused, l.count);
    aten_step += aten * l.count, fused_step += fused * l.count;
  }
  std::printf("ResNet-18 step, 17 BatchNorm+ReLU layers: aten %.2f ms, fused %.2f ms, %.2fx, saves %.2f ms\n", aten_step,
              fused_step, aten_step / fused_step, aten_step - fused_step);
  // The stem's max-pool: 3x3, stride 2, padding 1, 64 x 112² -> 56².
  const auto o = torch::TensorOptions().device(device);
  const auto cl = c10::MemoryFormat::ChannelsLast;
  torch::Tensor x = torch::randn({batch, 64, 112, 112}, o).to(dtype).contiguous(cl).requires_grad_(true);
  const torch::Tensor dy = torch::randn({batch, 64, 56, 56}, o).to(dtype).contiguous(cl);
  const PoolWindow stem{{3, 3}, {2, 2}, {1, 1}};
  const double aten = time_ms(
      [&] {
        x.mutable_grad() = torch::Tensor();
        torch::max_pool2d(x, stem.kernel, stem.stride, stem.padding).backward(dy);
      },
      device, reps);
  const double own = time_ms(
      [&] {
        x.mutable_grad() = torch::Tensor();
        max_pool(x, stem).backward(dy);
      },
      device, reps);
  std::printf("%-22s %9.3f %9.3f %6.2fx  (x1 per step; aten vs lockstep's max-pool)\n", "max-pool 64x112² 3x3/2", aten,
              own, aten / own);
  std::printf("ResNet-18 step, BatchNorm+ReLU and max-pool: aten %.2f ms, lockstep %.2f ms, saves %.2f ms\n",
              aten_step + aten, fused_step + own, aten_step + aten - fused_step - own);
  return 0;
}
