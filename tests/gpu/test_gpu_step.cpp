// gpu_tests (ctest -L gpu; bench/gpu.sh runs it from the GPU bundle): the device step's parts
// on a CUDA GPU against their CPU results. Every test prints "skipped: no GPU" and skips where
// torch sees none (CI), so the binary is built and run everywhere.
//   - the fused optimizer kernels on CUDA == torch::optim on the CPU, 50 steps;
//   - the fp16 loss scaler on CUDA: an overflowing step is skipped (parameters untouched),
//     the scale halves, a finite step runs;
//   - the NCCL gradient reducer == the MPI reducer on the same gradients (every rank of the
//     run: one rank per GPU), buckets, 1/world and the written-back averages alike;
//   - the whole step captured as a CUDA graph and replayed == the same step run eagerly over
//     the same fixed buffers (static_step.hpp), fp32 and fp16 with the loss scaler; the
//     replayed steps make no host sync (c10's sync debug mode as an error).
// TF32 is off here (cuBLAS/cuDNN), so float32 results compare tightly.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <vector>

#include "core/dist/grad_reducer.hpp"
#include "core/dist/mpi_communicator.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/dist/nccl_bootstrap.hpp"
#include "core/dist/nccl_communicator.hpp"
#include "core/optim/loss_scaler.hpp"
#include "core/optim/fused_step.hpp"
#include "core/optim/optimizer.hpp"
#include "core/model/registry.hpp"
#include "core/optim/loss.hpp"
#include "core/train/objective.hpp"
#include "core/train/run_stream.hpp"
#include "core/train/static_step.hpp"
#include "mpi_test_env.hpp"
#include "step_parts.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#endif

using namespace lockstep;
using lockstep::testing::mpi;

namespace {

#define SKIP_WITHOUT_GPU()                                              \
  do {                                                                  \
    if (!torch::cuda::is_available()) GTEST_SKIP() << "skipped: no GPU"; \
    at::globalContext().setAllowTF32CuBLAS(false);                      \
    at::globalContext().setAllowTF32CuDNN(false);                       \
  } while (0)

std::vector<torch::Tensor> make_params(torch::Device device, uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> ps{torch::randn({16, 3, 3, 3}).contiguous(at::MemoryFormat::ChannelsLast),
                                torch::randn({16}), torch::randn({10, 64})};
  for (auto& p : ps) p = p.to(device).set_requires_grad(true);
  return ps;
}

void set_grads(std::vector<torch::Tensor>& ps, int step) {
  torch::manual_seed(500 + static_cast<uint64_t>(step));
  for (auto& p : ps)
    p.mutable_grad() = (torch::randn(p.sizes()) * (1.0 + 0.1 * step)).to(p.device()).contiguous(p.suggest_memory_format());
}

double max_rel_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const torch::Tensor x = a[i].detach().cpu(), y = b[i].detach().cpu();
    worst = std::max(worst, (x - y).abs().max().item<double>() / std::max(1.0, x.abs().max().item<double>()));
  }
  return worst;
}

}  // namespace

TEST(GpuStep, FusedOptimizersOnCudaMatchTorchOptimOnCpu) {
  SKIP_WITHOUT_GPU();
  const std::vector<OptimizerOptions> cases{{OptimizerKind::kSgd, 0.05, 0.9, true, 5e-4},
                                            {OptimizerKind::kAdam, 1e-3, 0.9, false, 1e-4},
                                            {OptimizerKind::kAdamW, 1e-3, 0.9, false, 1e-2}};
  for (const auto& o : cases) {
    auto cpu = make_params(torch::kCPU, 3), gpu = make_params(torch::kCUDA, 3);
    auto ref = make_optimizer(cpu, o), fused = make_optimizer(gpu, o);
    for (int step = 0; step < 50; ++step) {
      set_grads(cpu, step);
      set_grads(gpu, step);
      ref->step();
      fused_step(*fused, o.kind);
    }
    EXPECT_LT(max_rel_diff(cpu, gpu), 1e-5) << to_string(o.kind);
  }
}

TEST(GpuStep, LossScalerSkipsAnOverflowingStepOnCuda) {
  SKIP_WITHOUT_GPU();
  LossScaler scaler(true, torch::kCUDA, 1024.0, 2000);
  auto ps = make_params(torch::kCUDA, 4);
  set_grads(ps, 0);
  ps[1].mutable_grad()[3] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(scaler.unscale_and_update(ps)) << "an inf gradient must skip the step";
  EXPECT_EQ(scaler.current_scale(), 512.0);
  EXPECT_EQ(scaler.skipped(), 1);
  set_grads(ps, 1);
  const torch::Tensor before = ps[2].grad().clone();
  EXPECT_TRUE(scaler.unscale_and_update(ps));
  EXPECT_TRUE(torch::allclose(ps[2].grad(), before / 512.0)) << "finite gradients are unscaled";
  EXPECT_EQ(scaler.skipped(), 1);
}

TEST(GpuStep, NcclReducerEqualsMpiReducer) {
  SKIP_WITHOUT_GPU();
  ASSERT_TRUE(nccl_compiled()) << "this build has no NCCL backend";
  const int device = mpi().local_rank() % static_cast<int>(torch::cuda::device_count());
  auto cpu = make_params(torch::kCPU, 9), gpu = make_params(torch::Device(torch::kCUDA, device), 9);
  MpiCommunicator mpi_comm(mpi());
  std::unique_ptr<Communicator> nccl = make_nccl_communicator(mpi(), device);
  // A small bucket size: several buckets, so the bucket order and the write-back are tested.
  GradReducer on_cpu(cpu, mpi_comm, 0.004), on_gpu(gpu, *nccl, 0.004);
  ASSERT_GT(on_gpu.buckets().size(), 1u);
  for (int step = 0; step < 3; ++step) {
    set_grads(cpu, step + 10 * mpi().rank());  // different gradients on every rank
    set_grads(gpu, step + 10 * mpi().rank());
    on_cpu.average_gradients();
    on_gpu.average_gradients();
    std::vector<torch::Tensor> gc, gg;
    for (auto& p : cpu) gc.push_back(p.grad());
    for (auto& p : gpu) gg.push_back(p.grad());
    EXPECT_LT(max_rel_diff(gc, gg), 1e-6) << "step " << step;
  }
}

namespace {

// One model, optimizer, reducer and scaler on the GPU (tests/mpi/step_parts.hpp), stepped by
// a StaticStep, captured or not.
struct StaticRun : lockstep::testing::StepParts {
  std::unique_ptr<StaticStep> step;
  StaticRun(Amp amp, bool capture) : StepParts(gpu_options(amp)) {
    step = std::make_unique<StaticStep>(parts(), capture);
  }
  static lockstep::testing::StepOptions gpu_options(Amp amp) {
    lockstep::testing::StepOptions o;
    o.device = torch::kCUDA;
    o.amp = amp;
    o.side = 28;
    o.classes = 10;
    o.lr = 0.05;
    o.weight_decay = 5e-4;
    o.clip_norm = 1.0;
    o.seed = 11;
    return o;
  }
};

}  // namespace

TEST(GpuStep, CapturedStepEqualsTheEagerStaticStep) {
  SKIP_WITHOUT_GPU();
  if (mpi().size() > 1) GTEST_SKIP() << "one rank: the graph holds no all-reduce";
  const RunStream stream(torch::Device(torch::kCUDA, 0));  // capture needs a side stream
  for (Amp amp : {Amp::kNone, Amp::kFp16}) {
    StaticRun eager(amp, false), graphed(amp, true);
    std::vector<const void*> grads_at_capture;
    for (int i = 0; i < 12; ++i) {
      torch::manual_seed(900 + i);
      const torch::Tensor x = torch::randn({32, 1, 28, 28}).cuda(), y = torch::randint(0, 10, {32}).cuda();
      const double lr = 0.05 * (1.0 - 0.02 * i);  // a schedule: the replay must read each step's lr
      const bool steady = i > StaticStep::kWarmupSteps;
      if (steady) c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
      StepOutput a = eager.step->run(x, y, lr, nullptr);
      StepOutput b = graphed.step->run(x, y, lr, nullptr);
      c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
      EXPECT_EQ(graphed.step->replaying(), i >= StaticStep::kWarmupSteps) << "step " << i;
      EXPECT_NEAR(a.loss.item<double>(), b.loss.item<double>(), 1e-5 * std::abs(a.loss.item<double>())) << "step " << i;
      EXPECT_EQ(a.correct.item<int64_t>(), b.correct.item<int64_t>()) << "step " << i;
      // Each replay writes the gradients the capture created: their addresses stay.
      std::vector<const void*> now;
      for (const auto& p : graphed.params) now.push_back(p.grad().data_ptr());
      if (i == StaticStep::kWarmupSteps) grads_at_capture = now;
      if (i > StaticStep::kWarmupSteps) EXPECT_EQ(now, grads_at_capture) << "a gradient moved at step " << i;
    }
    EXPECT_LT(max_rel_diff(eager.params, graphed.params), 1e-5) << to_string(amp);
    EXPECT_EQ(eager.step->clipped_steps(), graphed.step->clipped_steps());
    if (amp == Amp::kFp16) EXPECT_EQ(eager.scaler.current_scale(), graphed.scaler.current_scale());
  }
}
