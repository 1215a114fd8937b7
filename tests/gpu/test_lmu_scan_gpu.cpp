// gpu_tests: the LMU's recurrence (core/model/lmu_scan) on a GPU. Prints "skipped: no GPU"
// and skips where torch sees none (CI).
//   - lmu_scan on CUDA == on the CPU: values and gradients of C and W within float32
//     rounding (cuBLAS and the CPU's BLAS sum in different orders; TF32 off);
//   - the speech job's model (CTC lmu over 40 bands, width 256: theta 50, order 32, 288 state
//     values) on CUDA == the CPU within float32 rounding, and under bf16 autocast the logits and
//     every parameter's gradient close to the CPU's float32 run; the fold bit-equal under
//     autocast;
//   - a steady forward and backward make no host sync (the frames are a host loop of
//     device launches: no value is read back).
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <map>
#include <string>

#include "core/model/lmu_scan.hpp"
#include "core/model/registry.hpp"
#include "core/optim/amp.hpp"
#include "skip_without_gpu.hpp"
#include "test_helpers.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

using namespace lockstep;

namespace {

double max_rel(const torch::Tensor& a, const torch::Tensor& b) {
  const torch::Tensor x = a.to(torch::kCPU, torch::kDouble), y = b.to(torch::kCPU, torch::kDouble);
  return ((x - y).abs().max() / y.abs().max().clamp_min(1e-30)).item<double>();
}

// (logits, gradients by name) of NET on X with CTC-like upstream DY, on DEVICE.
std::pair<torch::Tensor, std::map<std::string, torch::Tensor>> run_net(const std::shared_ptr<Net>& net,
                                                                       const torch::Tensor& x, const torch::Tensor& dy,
                                                                       torch::Device device, Amp amp) {
  net->to(device);
  net->zero_grad();
  torch::Tensor y;
  {
    const AutocastGuard autocast(amp, device);
    torch::Tensor out_len;
    y = net->forward_sequence(x.to(device), torch::full({x.size(0)}, x.size(2), torch::kLong), &out_len);
  }
  (y.to(torch::kFloat) * dy.to(device)).sum().backward();
  std::map<std::string, torch::Tensor> grads;
  for (const auto& p : net->named_parameters()) grads[p.key()] = p.value().grad().cpu().clone();
  return {y.detach().cpu(), grads};
}

}  // namespace

TEST(LmuScanGpu, CudaEqualsTheCpuWithinRounding) {
  SKIP_WITHOUT_GPU();
#ifdef LOCKSTEP_HAVE_CUDA
  at::globalContext().setAllowTF32CuBLAS(false);
  torch::manual_seed(11);
  const torch::Tensor c = torch::randn({200, 16, 288}), w = 0.05 * torch::randn({288, 288});
  std::vector<torch::Tensor> out;
  for (const torch::Device d : {torch::Device(torch::kCPU), torch::Device(torch::kCUDA)}) {
    const torch::Tensor cd = c.to(d).requires_grad_(), wd = w.to(d).requires_grad_();
    const torch::Tensor s = lmu_scan(cd, wd, 256);
    torch::manual_seed(12);  // the same upstream gradient on both devices
    const torch::Tensor g = torch::randn(s.sizes()).to(d);
    const auto grads = torch::autograd::grad({(s * g).sum()}, {cd, wd});
    out.insert(out.end(), {s.cpu(), grads[0].cpu(), grads[1].cpu()});
  }
  EXPECT_LT(max_rel(out[3], out[0]), 1e-5) << "states";
  EXPECT_LT(max_rel(out[4], out[1]), 1e-4) << "dC";
  EXPECT_LT(max_rel(out[5], out[2]), 1e-4) << "dW";
#endif
}

TEST(LmuScanGpu, SpeechModelUnderBf16AutocastKeepsTheRecurrenceInFloat32) {
  SKIP_WITHOUT_GPU();
#ifdef LOCKSTEP_HAVE_CUDA
  at::globalContext().setAllowTF32CuBLAS(false);
  torch::manual_seed(13);
  io::DatasetSpec spec = lockstep::testing::speech_spec();  // the speech job's shape: 40 bands
  spec.sample_shape = {40, 120};
  spec.mean.assign(40, 0.0);
  spec.std.assign(40, 1.0);
  auto net = make_model(ModelOptions{"lmu", 0.0, 256, 18}, spec);
  const torch::Tensor x = torch::randn({16, 40, 120});
  torch::Tensor probe;
  {
    torch::Tensor out_len;
    probe = net->forward_sequence(x, torch::full({16}, 120, torch::kLong), &out_len);
  }
  const torch::Tensor dy = torch::randn(probe.sizes());
  const auto cpu = run_net(net, x, dy, torch::kCPU, Amp::kNone);
  const auto gpu32 = run_net(net, x, dy, torch::kCUDA, Amp::kNone);
  EXPECT_LT(max_rel(gpu32.first, cpu.first), 1e-4);
  for (const auto& [name, g] : cpu.second) EXPECT_LT(max_rel(gpu32.second.at(name), g), 1e-3) << name;
  // bf16: only the input and output layers round to 16 bits.
  const auto gpu16 = run_net(net, x, dy, torch::kCUDA, Amp::kBf16);
  EXPECT_LT(max_rel(gpu16.first.to(torch::kFloat), cpu.first), 5e-2);
  for (const auto& [name, g] : cpu.second) EXPECT_LT(max_rel(gpu16.second.at(name), g), 1e-1) << name;
  // The fold: CUDA autocast does not reach it.
  const auto on = torch::TensorOptions().device(torch::kCUDA);
  const LmuCell cell{torch::randn({1, 16}, on), torch::randn({1, 8}, on), torch::randn({16, 16}, on),
                     torch::randn({16, 8}, on), torch::randn({8, 8}, on), torch::randn({1, 8}, on)};
  const torch::Tensor ux = torch::randn({30, 4, 1}, on), hx = torch::randn({30, 4, 16}, on);
  const LmuFold plain = lmu_fold(cell, ux, hx);
  LmuFold under;
  {
    const AutocastGuard autocast(Amp::kBf16, torch::kCUDA);
    under = lmu_fold(cell, ux, hx);
  }
  EXPECT_EQ(under.w.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(under.w, plain.w));
  EXPECT_TRUE(torch::equal(under.c, plain.c));
#endif
}

TEST(LmuScanGpu, ASteadyStepMakesNoHostSync) {
  SKIP_WITHOUT_GPU();
#ifdef LOCKSTEP_HAVE_CUDA
  torch::manual_seed(14);
  auto net = make_model(ModelOptions{"lmu", 0.0, 64, 18}, lockstep::testing::speech_spec());
  net->to(torch::kCUDA);
  const torch::Tensor x = torch::randn({8, 3, 50}, torch::TensorOptions().device(torch::kCUDA));
  const torch::Tensor lengths = torch::full({8}, 50, torch::kLong);
  for (int step = 0; step < 3; ++step) {
    if (step == 2) c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
    try {
      torch::Tensor out_len;
      net->forward_sequence(x, lengths, &out_len).square().sum().backward();
    } catch (...) {
      c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
      throw;
    }
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
  }
  torch::cuda::synchronize();
#endif
}
