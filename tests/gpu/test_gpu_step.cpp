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
//     replayed steps make no host sync (c10's sync debug mode as an error); the same with the
//     fed bytes normalised inside the captured step, and with the gradient all-reduces
//     (NCCL, every rank of the run) inside the graph;
//   - the batch feed's copy stream delivers every batch whole while the host runs ahead, also
//     straight out of the loader's pinned batches refilled after their fences;
//   - a capture that fails runs the step eagerly, as the eager step, and its memory comes back;
//   - a checkpoint snapshot queued between steps (no host sync) loads as the state at its step;
//   - host copies (the best weights) queued behind a busy stream hold their moment's values;
//   - NVML's gauges of the rank's GPU (gpu_gauges.hpp) read in range.
// TF32 is off here (cuBLAS/cuDNN), so float32 results compare tightly.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "core/data/batch_feed.hpp"
#include "core/data/batch_maker.hpp"
#include "core/data/host_buffers.hpp"
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
#include "core/train/gpu_gauges.hpp"
#include "core/train/host_copies.hpp"
#include "core/train/state_snapshot.hpp"
#include "core/train/static_step.hpp"
#include "io/loader/batch_pool.hpp"
#include "image_spec.hpp"
#include "mpi_test_env.hpp"
#include "skip_without_gpu.hpp"
#include "step_parts.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#endif

using namespace lockstep;
using lockstep::testing::mpi;

namespace {

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
// a StaticStep, captured or not. fp16: a loss scale of 2^24 growing every 2 steps, so that
// steps overflow and are skipped while replaying too, not only in the warm-up.
struct StaticRun : lockstep::testing::StepParts {
  std::unique_ptr<StaticStep> step;
  StaticRun(Amp amp, bool capture, OptimizerKind kind = OptimizerKind::kSgd) : StepParts(gpu_options(amp, kind)) {
    if (amp == Amp::kFp16) scaler = LossScaler(true, torch::kCUDA, std::ldexp(1.0, 24), 2);
    step = std::make_unique<StaticStep>(parts(), capture);
  }
  static lockstep::testing::StepOptions gpu_options(Amp amp, OptimizerKind kind = OptimizerKind::kSgd) {
    lockstep::testing::StepOptions o;
    o.optimizer = kind;
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
  // Deterministic cuDNN: the fp16 runs overflow at the edge of fp16's range every third step,
  // and an atomic gradient sum rounding otherwise in one run would skip another step there.
  struct DeterministicCudnn {
    bool was = at::globalContext().deterministicCuDNN();
    DeterministicCudnn() { at::globalContext().setDeterministicCuDNN(true); }
    ~DeterministicCudnn() { at::globalContext().setDeterministicCuDNN(was); }
  } deterministic;
  // SGD (fp32, fp16 with the loss scaler), Adam and AdamW (their lr and step count read on the
  // device each replay; under fp16 a skipped step takes its count back there).
  for (const auto& [amp, kind] : {std::pair{Amp::kNone, OptimizerKind::kSgd}, std::pair{Amp::kFp16, OptimizerKind::kSgd},
                                  std::pair{Amp::kNone, OptimizerKind::kAdam}, std::pair{Amp::kBf16, OptimizerKind::kAdamW},
                                  std::pair{Amp::kFp16, OptimizerKind::kAdam}}) {
    SCOPED_TRACE(std::string(to_string(amp)) + " " + to_string(kind));
    StaticRun eager(amp, false, kind), graphed(amp, true, kind);
    std::vector<const void*> grads_at_capture;
    int64_t skipped_at_capture = 0;
    constexpr int kSteps = 20;
    for (int i = 0; i < kSteps; ++i) {
      torch::manual_seed(900 + i);
      const torch::Tensor x = torch::randn({32, 1, 28, 28}).cuda(), y = torch::randint(0, 10, {32}).cuda();
      // A schedule: the replay must read each step's lr.
      const double lr = (kind == OptimizerKind::kSgd ? 0.05 : 2e-3) * (1.0 - 0.02 * i);
      set_lr(*eager.opt, lr);
      set_lr(*graphed.opt, lr);
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
      if (i == StaticStep::kWarmupSteps) grads_at_capture = now, skipped_at_capture = graphed.scaler.skipped();
      if (i > StaticStep::kWarmupSteps) EXPECT_EQ(now, grads_at_capture) << "a gradient moved at step " << i;
    }
    EXPECT_LT(max_rel_diff(eager.params, graphed.params), 1e-5) << to_string(amp);
    EXPECT_EQ(eager.step->clipped_steps(), graphed.step->clipped_steps());
    eager.counter->settle();  // what a checkpoint does first
    graphed.counter->settle();
    EXPECT_EQ(next_step_count(*graphed.opt, kind), next_step_count(*eager.opt, kind)) << "the host counts of replays";
    if (kind != OptimizerKind::kSgd) EXPECT_EQ(next_step_count(*graphed.opt, kind), kSteps + 1 - graphed.scaler.skipped());
    if (amp == Amp::kFp16) {
      EXPECT_EQ(eager.scaler.current_scale(), graphed.scaler.current_scale());
      EXPECT_EQ(eager.scaler.skipped(), graphed.scaler.skipped());
      EXPECT_GT(graphed.scaler.skipped(), skipped_at_capture) << "no step was skipped while replaying";
    }
  }
}

// --train.cuda-graph on at several ranks: the step captured with its gradient all-reduces. A
// real NCCL communicator and a reducer that does not pass through (so at one rank too the
// graph holds the copies into the bucket slots and the bucketed ncclAllReduces, forked onto
// NCCL's stream and joined back) == the same step run eagerly over the same communicator;
// the replays make no host sync; every gradient stays its bucket slot, at a fixed address.
// As in the trainer, the model and reducer are made before the run's stream is set (the
// reducer's hooks must still run on it), and the graph goes before the communicator. At one
// rank NCCL enqueues nothing for an in-place all-reduce: there this proves the capture of
// the hooks, the slot copies and the fork/join onto NCCL's stream, not NCCL inside a graph
// (that needs 2 GPUs: the same test under mpirun -np 2).
TEST(GpuStep, CapturedStepHoldsItsGradientAllReduces) {
  SKIP_WITHOUT_GPU();
  ASSERT_TRUE(nccl_compiled()) << "this build has no NCCL backend";
  const int device = mpi().local_rank() % static_cast<int>(torch::cuda::device_count());
  const torch::Device gpu(torch::kCUDA, static_cast<c10::DeviceIndex>(device));
  std::unique_ptr<Communicator> nccl = make_nccl_communicator(mpi(), device);
  lockstep::testing::StepOptions o = StaticRun::gpu_options(Amp::kNone);
  o.device = gpu;
  o.comm = nccl.get();
  o.pass_through = false;
  o.bucket_mb = 0.05;  // several buckets
  lockstep::testing::StepParts eager_parts(o), graphed_parts(o);
  ASSERT_GT(graphed_parts.reducer->buckets().size(), 2u);
  const RunStream stream(gpu);
  auto eager = std::make_unique<StaticStep>(eager_parts.parts(), false);
  auto graphed = std::make_unique<StaticStep>(graphed_parts.parts(), true);
  std::vector<const void*> grads_at_capture;
  for (int i = 0; i < 12; ++i) {
    torch::manual_seed(700 + i + 1000 * mpi().rank());  // each rank's own batch
    const torch::Tensor x = torch::randn({32, 1, 28, 28}).to(gpu), y = torch::randint(0, 10, {32}).to(gpu);
    const double lr = 0.05 * (1.0 - 0.02 * i);
    const bool steady = i > StaticStep::kWarmupSteps;
    if (steady) c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
    StepOutput a = eager->run(x, y, lr, nullptr);
    StepOutput b = graphed->run(x, y, lr, nullptr);
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
    ASSERT_EQ(graphed->replaying(), i >= StaticStep::kWarmupSteps) << "step " << i << ": not captured";
    EXPECT_NEAR(a.loss.item<double>(), b.loss.item<double>(), 1e-5 * std::abs(a.loss.item<double>())) << "step " << i;
    std::vector<const void*> now;
    for (size_t k = 0; k < graphed_parts.params.size(); ++k) {
      EXPECT_TRUE(graphed_parts.params[k].grad().is_same(graphed_parts.reducer->slot(k))) << "parameter " << k;
      now.push_back(graphed_parts.params[k].grad().data_ptr());
    }
    if (i == StaticStep::kWarmupSteps) grads_at_capture = now;
    if (i > StaticStep::kWarmupSteps) EXPECT_EQ(now, grads_at_capture) << "a gradient moved at step " << i;
  }
  EXPECT_LT(max_rel_diff(eager_parts.params, graphed_parts.params), 1e-5);
  // Every rank holds the same parameters: the replayed all-reduces did reduce.
  for (const auto& p : graphed_parts.params) {
    auto lo = p.detach().cpu().contiguous(), hi = lo.clone();
    MPI_Allreduce(MPI_IN_PLACE, lo.data_ptr<float>(), static_cast<int>(lo.numel()), MPI_FLOAT, MPI_MIN, mpi().comm());
    MPI_Allreduce(MPI_IN_PLACE, hi.data_ptr<float>(), static_cast<int>(hi.numel()), MPI_FLOAT, MPI_MAX, mpi().comm());
    EXPECT_TRUE(torch::equal(lo, hi));
  }
  graphed.reset();  // before the communicator: ncclCommDestroy waits for the graphs holding its work
  eager.reset();
  nccl->destroy();
}

// A capture that fails (here: the input preparation reads the device on the host, which
// invalidates the capture) runs the step eagerly from then on, with the same results as the
// eager step, and gives back the memory the capture allocated: PyTorch 2.11 leaves a pool
// whose cudaStreamEndCapture failed recording and unreleased (static_step.cpp,
// Graph::release_failed). Found by reading; never run on a GPU before.
TEST(GpuStep, AFailedCaptureRunsEagerlyAndGivesBackItsMemory) {
  SKIP_WITHOUT_GPU();
  if (mpi().size() > 1) GTEST_SKIP() << "one rank: a failed capture goes eager only there";
  const RunStream stream(torch::Device(torch::kCUDA, 0));
  lockstep::testing::StepParts eager_parts(StaticRun::gpu_options(Amp::kNone)), failing_parts(StaticRun::gpu_options(Amp::kNone));
  const auto syncing = [](const torch::Tensor& x) {
    (void)x.abs().max().item<float>();  // a host read: fine eagerly, invalidates a capture
    return x;
  };
  StaticStepParts ep = eager_parts.parts(), fp = failing_parts.parts();
  ep.prepare = syncing;
  fp.prepare = syncing;
  StaticStep eager(ep, false), failing(fp, true);
  const auto reserved = [] {
    torch::cuda::synchronize();
    c10::cuda::CUDACachingAllocator::emptyCache();
    return c10::cuda::CUDACachingAllocator::getDeviceStats(0).reserved_bytes[0].current;
  };
  int64_t before = 0;
  for (int i = 0; i < 8; ++i) {
    torch::manual_seed(300 + i);
    const torch::Tensor x = torch::randn({32, 1, 28, 28}).cuda(), y = torch::randint(0, 10, {32}).cuda();
    if (i == StaticStep::kWarmupSteps) before = reserved();
    StepOutput a = eager.run(x, y, 0.05, nullptr);
    StepOutput b = failing.run(x, y, 0.05, nullptr);
    EXPECT_FALSE(failing.replaying()) << "step " << i << ": the capture read the device, it cannot have succeeded";
    EXPECT_NEAR(a.loss.item<double>(), b.loss.item<double>(), 1e-5 * std::abs(a.loss.item<double>())) << "step " << i;
  }
  EXPECT_LT(max_rel_diff(eager_parts.params, failing_parts.params), 1e-5);
  const int64_t after = reserved();
  EXPECT_LE(after, before + (1 << 20)) << "the failed capture's pool kept " << (after - before) << " bytes reserved";
}

namespace {

io::DatasetSpec gray_spec() { return lockstep::testing::image_spec("gray", 28, 10, 120.0, 64.0); }

}  // namespace

// The feed's copy stream (batch_feed.hpp): every batch arrives whole although the host runs
// ahead of a busy compute stream, its buffers are overwritten as soon as feed() returns, and
// the landing blocks come round every kSlots batches; normalised on the GPU it equals the
// CPU's inputs() bit for bit (a conversion, a subtraction and a multiplication: exact on both).
TEST(GpuStep, TheFeedsCopyStreamDeliversEveryBatchWhole) {
  SKIP_WITHOUT_GPU();
  const RunStream stream(torch::Device(torch::kCUDA, 0));
  const io::DatasetSpec spec = gray_spec();
  const BatchMaker on_gpu(spec, torch::kCUDA, true, /*channels_last=*/true), on_cpu(spec, torch::kCPU, false, true);
  BatchFeed feed(spec, torch::kCUDA);
  const torch::Tensor busy = torch::randn({2048, 2048}, torch::kCUDA);
  std::vector<torch::Tensor> got, want, labels;
  std::vector<unsigned char> raw(64 * spec.sample_bytes());
  std::vector<int64_t> records(64);
  for (int k = 0; k < 40; ++k) {
    torch::manual_seed(500 + k);
    const torch::Tensor src = torch::randint(0, 256, {64, 1, 28, 28}, torch::kUInt8);
    std::memcpy(raw.data(), src.data_ptr(), raw.size());
    for (int64_t i = 0; i < 64; ++i) records[static_cast<size_t>(i)] = (i + k) % 10;
    want.push_back(on_cpu.inputs(raw.data(), 64));
    for (int r = 0; r < 16; ++r) (void)busy.mm(busy);  // ~5 ms a batch: the compute stream falls far behind the host
    const FedBatch f = feed.feed(raw.data(), 64, records.data());
    std::fill(raw.begin(), raw.end(), uint8_t{0});
    got.push_back(on_gpu.normalise(f.samples));
    labels.push_back(f.labels.clone());
    feed.done();
  }
  for (int k = 0; k < 40; ++k) {
    ASSERT_TRUE(torch::equal(got[static_cast<size_t>(k)].cpu(), want[static_cast<size_t>(k)])) << "batch " << k;
    std::vector<int64_t> y;
    for (int64_t i = 0; i < 64; ++i) y.push_back((i + k) % 10);
    ASSERT_TRUE(torch::equal(labels[static_cast<size_t>(k)].cpu(), torch::tensor(y, torch::kLong))) << "labels " << k;
  }
}

// The training loader's batches in pinned memory (io/loader/batch_pool), fed straight to the
// GPU while the compute stream is far behind the host: each batch is refilled on another
// thread, as the loader's is (no device set there: the fence sets its own), only after
// BatchPool::wait_for_reuse — which has to wait, the copies being queued behind the busy
// compute stream — and every batch arrives whole.
TEST(GpuStep, PinnedLoaderBatchesArriveWholeWhenRefilledAfterTheirFence) {
  SKIP_WITHOUT_GPU();
  const RunStream stream(torch::Device(torch::kCUDA, 0));
  const io::DatasetSpec spec = gray_spec();
  const BatchMaker on_gpu(spec, torch::kCUDA, true), on_cpu(spec, torch::kCPU, false);
  BatchFeed feed(spec, torch::kCUDA);
  const HostBuffers pinned = host_buffers(torch::Device(torch::kCUDA, 0));
  io::BatchPool pool(spec, 64, 3, &pinned);
  const torch::Tensor busy = torch::randn({2048, 2048}, torch::kCUDA);
  std::vector<torch::Tensor> got, want;
  int waited = 0;
  for (int k = 0; k < 40; ++k) {
    io::Batch& b = pool.at(static_cast<size_t>(k % 3));
    std::thread refill([&] {  // the loader's part
      waited += io::BatchPool::wait_for_reuse(b) ? 1 : 0;
      torch::manual_seed(700 + k);
      const torch::Tensor src = torch::randint(0, 256, {64, 1, 28, 28}, torch::kUInt8);
      std::memcpy(b.samples, src.data_ptr(), static_cast<size_t>(src.numel()));
      for (int64_t i = 0; i < 64; ++i) b.labels[static_cast<size_t>(i)] = (i + k) % 10;
    });
    refill.join();
    want.push_back(on_cpu.inputs(b.samples, 64));
    for (int r = 0; r < 16; ++r) (void)busy.mm(busy);  // the compute stream falls far behind the host
    const FedBatch f = feed.feed(b.samples, 64, b.labels.data(), b.reuse);
    got.push_back(on_gpu.normalise(f.samples));
    feed.done();
  }
  for (int k = 0; k < 40; ++k)
    ASSERT_TRUE(torch::equal(got[static_cast<size_t>(k)].cpu(), want[static_cast<size_t>(k)])) << "batch " << k;
  EXPECT_EQ(feed.direct_feeds(), 40);
  EXPECT_GT(waited, 0) << "no refill found its copy in flight: the test did not exercise the fence";
}

// The fed bytes normalised inside the captured step (StepRunner without augmentation) ==
// the same step run eagerly over the same fixed buffers, and the replays make no host sync.
TEST(GpuStep, NormalisationInsideTheCapturedStepEqualsTheEagerStep) {
  SKIP_WITHOUT_GPU();
  if (mpi().size() > 1) GTEST_SKIP() << "one rank: the graph holds no all-reduce";
  const RunStream stream(torch::Device(torch::kCUDA, 0));
  const BatchMaker maker(gray_spec(), torch::kCUDA, true, /*channels_last=*/true);
  const auto prepare = [&maker](const torch::Tensor& raw) { return maker.normalise(raw); };
  lockstep::testing::StepParts eager_parts(StaticRun::gpu_options(Amp::kNone)), graph_parts(StaticRun::gpu_options(Amp::kNone));
  StaticStepParts pe = eager_parts.parts(), pg = graph_parts.parts();
  pe.prepare = prepare;
  pg.prepare = prepare;
  StaticStep eager(pe, false), graphed(pg, true);
  for (int i = 0; i < 10; ++i) {
    torch::manual_seed(700 + i);
    const torch::Tensor raw = torch::randint(0, 256, {32, 1, 28, 28}, torch::kUInt8).cuda();
    const torch::Tensor y = torch::randint(0, 10, {32}).cuda();
    const bool steady = i > StaticStep::kWarmupSteps;
    if (steady) c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
    const StepOutput a = eager.run(raw, y, 0.05, nullptr);
    const StepOutput b = graphed.run(raw, y, 0.05, nullptr);
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
    EXPECT_EQ(graphed.replaying(), i >= StaticStep::kWarmupSteps) << "step " << i;
    EXPECT_NEAR(a.loss.item<double>(), b.loss.item<double>(), 1e-5 * std::abs(a.loss.item<double>())) << "step " << i;
  }
  EXPECT_LT(max_rel_diff(eager_parts.params, graph_parts.params), 1e-5);
}

// A checkpoint's snapshot on the GPU (state_snapshot.hpp): the copies are queued on the run's
// stream between steps, more steps change the live tensors, and the payload serialised later
// (as the writer's thread does) loads as the state at the snapshot's step.
TEST(GpuStep, ASnapshotQueuedBetweenStepsLoadsAsTheStateAtItsStep) {
  SKIP_WITHOUT_GPU();
  const RunStream stream(torch::Device(torch::kCUDA, 0));
  // fp16: the loss scaler's state goes into the snapshot's extras, as the checkpointer's do.
  lockstep::testing::StepParts live(StaticRun::gpu_options(Amp::kFp16)), loaded(StaticRun::gpu_options(Amp::kFp16));
  StaticStep step(live.parts(), /*capture=*/false);
  const auto run = [&](int i) {
    torch::manual_seed(800 + i);
    return step.run(torch::randn({32, 1, 28, 28}).cuda(), torch::randint(0, 10, {32}).cuda(), 0.05, nullptr);
  };
  for (int i = 0; i < 8; ++i) run(i);  // past the first overflow skips of the fp16 scale
  std::vector<torch::Tensor> want, want_momentum;
  for (const auto& t : live.model->state_tensors()) want.push_back(t.detach().cpu());  // a sync: the test's own read
  for (const auto& p : live.params)
    want_momentum.push_back(static_cast<torch::optim::SGDParamState&>(*live.opt->state().at(p.unsafeGetTensorImpl()))
                                .momentum_buffer()
                                .cpu());
  ExtraState extra;
  extra.rng = torch::arange(16, torch::kUInt8).view({1, 16});
  extra.amp_scaler = live.scaler.state();
  c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
  const auto snapshot = std::make_shared<StateSnapshot>(*live.model, *live.opt, extra);
  for (int i = 8; i < 11; ++i) run(i);  // no host sync from the snapshot either
  c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
  std::string payload;
  std::thread writer([&] { payload = snapshot->serialize(); });
  writer.join();
  ExtraState back;
  load_state(payload, *loaded.model, loaded.opt.get(), "snapshot", &back);
  EXPECT_TRUE(torch::equal(back.rng, extra.rng)) << "the extras come back to the host";
  EXPECT_EQ(back.amp_scaler, extra.amp_scaler);
  for (size_t k = 0; k < loaded.params.size(); ++k) {
    const auto& m = static_cast<torch::optim::SGDParamState&>(*loaded.opt->state().at(loaded.params[k].unsafeGetTensorImpl()));
    EXPECT_TRUE(m.momentum_buffer().is_cuda());
    EXPECT_TRUE(torch::equal(m.momentum_buffer().cpu(), want_momentum[k])) << "momentum " << k;
  }
  const auto got = loaded.model->state_tensors();
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_TRUE(got[k].is_cuda()) << "loaded onto the model's device";
    EXPECT_TRUE(torch::equal(got[k].cpu(), want[k])) << "tensor " << k;
  }
}

// The best weights' host copies (host_copies.hpp, as Checkpointer::update_best makes them):
// queued behind a busy stream without a host sync, then the tensors change; once waited for
// on another thread the copies hold the values of the moment they were queued.
TEST(GpuStep, HostCopiesQueuedBehindABusyStreamHoldTheirMomentsValues) {
  SKIP_WITHOUT_GPU();
  const RunStream stream(torch::Device(torch::kCUDA, 0));
  const torch::Tensor busy = torch::randn({2048, 2048}, torch::kCUDA);
  std::vector<torch::Tensor> live{torch::randn({64, 3, 7, 7}).contiguous(at::MemoryFormat::ChannelsLast).cuda(),
                                  torch::randn({1000}).cuda()};
  std::vector<torch::Tensor> want;
  for (const auto& t : live) want.push_back(t.cpu());
  HostCopies copies;
  c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
  for (int r = 0; r < 32; ++r) (void)busy.mm(busy);
  for (const auto& t : live) (void)copies.add(t);
  copies.seal();
  for (auto& t : live) t.mul_(-3.0).add_(1.0);  // the next steps change the weights
  c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
  std::thread waiter([&] { copies.wait(); });
  waiter.join();
  ASSERT_EQ(copies.tensors().size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_TRUE(copies.tensors()[k].is_pinned());
    EXPECT_EQ(copies.tensors()[k].strides(), want[k].strides()) << "tensor " << k;
    EXPECT_TRUE(torch::equal(copies.tensors()[k], want[k])) << "tensor " << k;
  }
}

// NVML on a GPU machine (gpu_gauges.hpp): found by the device's PCI bus id, and its readings
// in range while the device computes.
TEST(GpuStep, TheGpuGaugesReadTheRanksGpu) {
  SKIP_WITHOUT_GPU();
  const GpuGauges g(torch::Device(torch::kCUDA, 0));
  ASSERT_TRUE(g.available()) << g.why_not();
  const torch::Tensor a = torch::randn({4096, 4096}, torch::kCUDA);
  for (int i = 0; i < 20; ++i) (void)a.mm(a);
  const GpuReading r = g.read();
  ASSERT_TRUE(r.util_pct && r.mem_gib && r.power_w);
  EXPECT_GE(*r.util_pct, 0.0);
  EXPECT_LE(*r.util_pct, 100.0);
  EXPECT_GT(*r.mem_gib, 0.05) << "this process's own allocations are in use";
  EXPECT_GT(*r.power_w, 1.0);
  torch::cuda::synchronize();
}
