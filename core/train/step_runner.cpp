// step_runner: see step_runner.hpp.
#include "core/train/step_runner.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include <string>
#include <utility>

#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/data/augment.hpp"
#include "core/data/host_buffers.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/model/max_pool_layer.hpp"
#include "core/model/sync_bn.hpp"
#include "core/optim/amp.hpp"
#include "core/optim/fused_step.hpp"
#include "core/optim/optimizer.hpp"
#include "core/optim/step_counter.hpp"
#include "core/train/session.hpp"
#include "core/train/step_timer.hpp"
#include "io/loader/epoch_loader.hpp"
#include "io/loader/sample_order.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace lockstep {

namespace {

// --debug.sync-check: c10's sync debug mode as an error for the scope of one step (the
// loop's own reads at log rows, evaluations and checkpoints stay allowed).
class SyncCheckScope {
 public:
  explicit SyncCheckScope(bool on) : on_(on) {
#ifdef LOCKSTEP_HAVE_CUDA
    if (on_) c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
#endif
  }
  ~SyncCheckScope() {
#ifdef LOCKSTEP_HAVE_CUDA
    if (on_) c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
#endif
  }
  SyncCheckScope(const SyncCheckScope&) = delete;
  SyncCheckScope& operator=(const SyncCheckScope&) = delete;

 private:
  bool on_;
};

// done() for the fed batch: finish() once its reads are issued; on an exception's way out
// the destructor does it, swallowing a second error (the first one is what the run reports).
class FeedDone {
 public:
  explicit FeedDone(BatchFeed& feed) : feed_(feed) {}
  ~FeedDone() {
    if (done_) return;
    try {
      feed_.done();
    } catch (...) {
    }
  }
  FeedDone(const FeedDone&) = delete;
  FeedDone& operator=(const FeedDone&) = delete;
  void finish() {
    done_ = true;
    feed_.done();
  }

 private:
  BatchFeed& feed_;
  bool done_ = false;
};

}  // namespace

StepRunner::StepRunner(Session& s, StepTimer& timer)
    : s_(s),
      timer_(timer),
      objective_(s.manifest.spec, *s.loss),
      feed_(s.manifest.spec, s.place.device, s.place.device.is_cuda(), s.cfg.copy_stream) {
  const Config& cfg = s.cfg;
  const bool cuda = s.place.device.is_cuda();
  if (cuda) batch_memory_ = host_buffers(s.place.device);
  if (cfg.cuda_graph == CudaGraph::kOff || (!cuda && cfg.cuda_graph == CudaGraph::kAuto)) return;
  StaticStepCase c;
  c.mode = cfg.cuda_graph;
  c.cuda = true;  // judged as on a GPU: on the CPU, "on" runs the same fixed-buffer step uncaptured
  c.world = s.mpi.size();
  c.class_labels = !objective_.sequence();
  c.ragged = s.manifest.spec.ragged;
  c.grad_accum = cfg.grad_accum;
  c.optimizer = cfg.optimizer;
  c.amp = cfg.amp;
  c.fused_optimizer = cfg.fused_optimizer;
  c.sync_bn = s.sync_bn_layers > 0;
  c.checkpoint_activations = cfg.checkpoint_activations && s.model->checkpoints_activations();
  if (const std::string why = static_step_obstacle(c); !why.empty()) {
    if (cfg.cuda_graph == CudaGraph::kOn)
      log::warn0("--train.cuda-graph on: the step stays eager here: " + why);
    else
      log::info0("whole-step CUDA graph: not used (" + why + ")");
    return;
  }
  if (!cuda)
    log::info0("--train.cuda-graph on, on the CPU: the step runs over fixed buffers as a GPU captures it, without a "
               "graph (the path the tests compare with the eager step)");
  StaticStepParts parts{*s.model, *s.opt, *s.reducer, s.scaler, *s.step_counter, objective_, s.trainable,
                        cfg.amp, cfg.clip_norm, s.place.device};
  // Without augmentation the fed bytes go in, and their normalisation is part of the step.
  if (!s.augment.enabled())
    parts.prepare = [&maker = *s.maker](const torch::Tensor& raw) { return maker.normalise(raw); };
  static_ = std::make_unique<StaticStep>(std::move(parts), /*capture=*/cuda);
}

StepRunner::~StepRunner() = default;

torch::Tensor StepRunner::inputs(const FedBatch& f, const io::Batch& b, int64_t micro, int64_t epoch) const {
  const Config& cfg = s_.cfg;
  torch::Tensor x = s_.maker->normalise(f.samples, b.labels.data());
  if (s_.augment.enabled())
    x = augment_batch(x, s_.augment,
                      io::mix_seed(cfg.seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(micro),
                                   static_cast<uint64_t>(s_.mpi.rank())),
                      [this](const torch::Tensor& host) { return s_.maker->upload(host); });
  return x;
}

StepOutput StepRunner::run_static(io::EpochLoader& loader, int64_t step, int64_t epoch, double lr) {
  timer_.begin_step();
  const io::Batch* b = loader.next();
  LOCKSTEP_REQUIRE(b != nullptr && b->step == step, "data loader ended before step " + std::to_string(step));
  const FedBatch f = feed_.feed(b->samples, s_.cfg.batch_size, b->labels.data(), b->reuse);
  FeedDone done(feed_);
  // The step normalises the fed bytes itself, unless augmentation prepares them here.
  const torch::Tensor x = s_.augment.enabled() ? inputs(f, *b, step, epoch) : f.samples;
  timer_.mark(Phase::kData);
  StepOutput out = static_->run(x, f.labels, lr, &timer_);
  done.finish();
  return out;
}

StepOutput StepRunner::run(io::EpochLoader& loader, int64_t step, int64_t epoch, double lr, int64_t global_step) {
  StepOutput out = run_step(loader, step, epoch, lr, global_step);
  // --model.fused-bn on: what the first step's forward pass actually fused (bn_act.hpp).
  if (!kernels_reported_) {
    kernels_reported_ = true;
    if (s_.fused_bn_layers > 0) log::info0(fused_bn_report(*s_.model) + " (the first step)");
    // --model.max-pool lockstep: which max-pool layers ran lockstep's kernels (max_pool_layer.hpp).
    if (s_.own_pool_layers > 0) log::info0(max_pool_report(*s_.model) + " (the first step)");
  }
  return out;
}

StepOutput StepRunner::run_step(io::EpochLoader& loader, int64_t step, int64_t epoch, double lr, int64_t global_step) {
  const Config& cfg = s_.cfg;
  const int64_t batch = cfg.batch_size, accum = cfg.grad_accum;
  const SyncCheckScope sync_check(s_.place.device.is_cuda() && cfg.sync_check > 0 && global_step + 1 >= cfg.sync_check);
  set_lr(*s_.opt, lr);
  if (static_) return run_static(loader, step, epoch, lr);
  s_.opt->zero_grad();
  timer_.begin_step();
  torch::Tensor step_loss, step_correct;
  for (int64_t a = 0; a < accum; ++a) {
    const int64_t micro = step * accum + a;
    const io::Batch* b = loader.next();
    LOCKSTEP_REQUIRE(b != nullptr && b->step == micro, "data loader ended before step " + std::to_string(step));
    const int64_t* records = b->labels.data();
    const FedBatch f = feed_.feed(b->samples, batch, records, b->reuse);
    FeedDone done(feed_);
    const torch::Tensor x = inputs(f, *b, micro, epoch);
    timer_.mark(Phase::kData);
    Scored scored;
    {
      AutocastGuard autocast(cfg.amp, s_.place.device);
      scored = objective_(*s_.model, *s_.maker, x, records, batch, objective_.sequence() ? torch::Tensor() : f.labels);
    }
    timer_.mark(Phase::kForward);
    s_.reducer->prepare(/*sync=*/a == accum - 1);  // no communication on inner micro-steps
    s_.scaler.scale(accum > 1 ? scored.loss / static_cast<double>(accum) : scored.loss).backward();
    done.finish();  // after backward: the labels are read there too
    timer_.mark(Phase::kBackward);
    step_loss = step_loss.defined() ? step_loss + scored.loss.detach() : scored.loss.detach();
    step_correct = step_correct.defined() ? step_correct + scored.correct : scored.correct;
    unaligned_ += scored.unaligned;
  }
  s_.reducer->finish([this] { timer_.mark(Phase::kComm); });
  // fp16: the fused kernels skip an overflowing step on the device, and Adam's step count,
  // which a skipped step must not advance, is kept there too (step_counter.hpp); torch::optim's
  // per-parameter step needs the decision on the host (loss_scaler.hpp).
  torch::Tensor found_inf;
  bool step_now = true;
  if (cfg.fused_optimizer)
    found_inf = s_.scaler.unscale_and_update_async(s_.trainable);
  else
    step_now = s_.scaler.unscale_and_update(s_.trainable);
  if (step_now) {
    if (cfg.clip_norm > 0) {
      const torch::Tensor over = clip_grad_norm_counted(s_.trainable, cfg.clip_norm, found_inf);
      clipped_ = clipped_.defined() ? clipped_ + over : over;
    }
    const torch::Tensor* inf = found_inf.defined() ? &found_inf : nullptr;
    if (!cfg.fused_optimizer) {
      s_.opt->step();
    } else if (s_.scaler.enabled() && cfg.optimizer != OptimizerKind::kSgd) {
      s_.step_counter->step(inf, nullptr);
    } else {
      fused_step(*s_.opt, cfg.optimizer, inf);
    }
  }
  timer_.mark(Phase::kOptimizer);
  return StepOutput{accum > 1 ? step_loss / static_cast<double>(accum) : step_loss, step_correct};
}

int64_t StepRunner::clipped_steps() const {
  return (clipped_.defined() ? clipped_.item<int64_t>() : int64_t{0}) + (static_ ? static_->clipped_steps() : 0);
}

void StepRunner::check_alignments(int64_t epoch, double samples) {
  double bad = static_cast<double>(std::exchange(unaligned_, 0));
  s_.mpi.allreduce_sum(&bad, 1);
  if (bad == 0) return;
  const std::string why = "no CTC alignment exists for them: a transcript needs more frames than the model outputs "
                          "for its utterance (fewer tokens per second, or a model that keeps more frames)";
  if (bad >= samples)
    throw UsageError(fmt::format("epoch {}: none of the {:.0f} training samples could be aligned; {}", epoch + 1, samples,
                                 why));
  log::warn0(fmt::format("epoch {}: {:.0f} of {:.0f} training samples trained nothing: {}", epoch + 1, bad, samples, why));
}

}  // namespace lockstep
