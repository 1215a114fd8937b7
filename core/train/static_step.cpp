// static_step: see static_step.hpp.
#include "core/train/static_step.hpp"

#include <ATen/autocast_mode.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/dist/grad_reducer.hpp"
#include "core/optim/amp.hpp"
#include "core/optim/fused_step.hpp"
#include "core/optim/loss_scaler.hpp"
#include "core/optim/optimizer.hpp"
#include "core/optim/step_counter.hpp"
#include "core/train/step_timer.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <ATen/core/CachingHostAllocator.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace lockstep {

std::string static_step_obstacle(const StaticStepCase& c) {
  if (!c.cuda) return "it needs a CUDA GPU";
  if (!c.class_labels) return "CTC sequence targets change shape every batch";
  if (c.ragged) return "ragged series change shape every batch";
  if (c.grad_accum > 1) return "--train.grad-accum runs several micro-batches per step";
  if (!c.fused_optimizer) return "--train.fused-optimizer false steps parameter by parameter on the host";
  if (c.sync_bn) return "--model.sync-bn communicates inside the forward pass";
  if (c.checkpoint_activations) return "--model.checkpoint-activations saves and restores RNG state on the host";
  // What only auto leaves out, last: `on` captures them.
  if (c.world > 1 && c.mode != CudaGraph::kOn)
    return "auto captures a one-rank step only until the gradient all-reduces inside the graph have been measured on "
           "several GPUs (--train.cuda-graph on captures them)";
  if (c.optimizer != OptimizerKind::kSgd && c.mode != CudaGraph::kOn)
    return std::string("auto captures --train.optimizer ") + to_string(c.optimizer) +
           " only once a GPU report has measured it (--train.cuda-graph on captures it)";
  return "";
}

#ifdef LOCKSTEP_HAVE_CUDA
// The captured step. PyTorch 2.11's ~CUDAGraph releases the graph's memory pool only after a
// capture_end that completed. A capture that a call inside it invalidated fails in
// capture_end (at cudaStreamEndCapture, before the allocators stop recording into the pool,
// or later): the memory it allocated (a step's activations) would stay reserved for nothing
// while the step runs eagerly, and the allocators would keep consulting the dead capture.
// release_failed() ends what is still on and releases the pool, where capture_end did not
// complete (so exactly once); cleanup only: its own errors never replace the capture's.
struct StaticStep::Graph : at::cuda::CUDAGraph {
  void release_failed() {
    if (capture_ended_ || capture_dev_ == UNDEFINED_DEVICE) return;  // the destructor's, or never begun
    namespace alloc = c10::cuda::CUDACachingAllocator;
    at::HostAllocator* host = at::getHostAllocator(at::kCUDA);
    const auto quietly = [](const auto& f) {
      try {
        f();
      } catch (...) {  // not recording (capture_end got that far), or no such pool
      }
    };
    quietly([&] { alloc::endAllocateToPool(capture_dev_, mempool_id_); });
    quietly([&] { alloc::releasePool(capture_dev_, mempool_id_); });
    quietly([&] { host->end_allocate_to_pool(mempool_id_); });  // pinned memory, where 2.11 records it
    quietly([&] { host->release_pool(mempool_id_); });
  }
};
#else
struct StaticStep::Graph {};
#endif

StaticStep::StaticStep(StaticStepParts parts, bool capture)
    : p_(parts), kind_(optimizer_kind(parts.opt)), capture_(capture && parts.device.is_cuda()) {
  const auto on = torch::TensorOptions().device(p_.device);
  // The fused kernels read a device lr as float32 on CUDA; on the CPU they read the value as a
  // double, which float64 keeps exact (the eager step's double lr).
  lr_ = torch::zeros({}, on.dtype(p_.device.is_cuda() ? torch::kFloat : torch::kDouble));
  clipped_ = torch::zeros({}, on.dtype(torch::kLong));
}

StaticStep::~StaticStep() = default;

bool StaticStep::replaying() const { return graph_ != nullptr; }

int64_t StaticStep::clipped_steps() const { return clipped_.item<int64_t>(); }

void StaticStep::body(StepTimer* timer) {
  // Gradients set to none, as the eager step does: backward then hands each parameter a fresh
  // gradient (no zeroing, no accumulation kernels). While capturing, those tensors come from
  // the graph's memory pool, and every replay writes the same ones again.
  p_.opt.zero_grad();
  const torch::Tensor x = p_.prepare ? p_.prepare(x_) : x_;
  Scored scored;
  {
    AutocastGuard autocast(p_.amp, p_.device);
    scored = p_.objective.classes(p_.model, x, y_);
  }
  if (timer) timer->mark(Phase::kForward);
  p_.reducer.prepare(/*sync=*/true);
  p_.scaler.scale(scored.loss).backward();
  if (timer) timer->mark(Phase::kBackward);
  p_.reducer.finish([timer] {
    if (timer) timer->mark(Phase::kComm);
  });
  const torch::Tensor found_inf = p_.scaler.unscale_and_update_async(p_.trainable);
  torch::NoGradGuard no_grad;
  if (p_.clip_norm > 0) clipped_.add_(clip_grad_norm_counted(p_.trainable, p_.clip_norm, found_inf));
  const torch::Tensor* inf = found_inf.defined() ? &found_inf : nullptr;
  if (kind_ == OptimizerKind::kSgd)
    fused_step(p_.opt, kind_, inf, &lr_);
  else  // the count advances on the device, and a skipped step takes it back there
    p_.counter.step(inf, &lr_);
  if (!loss_.defined()) {
    loss_ = scored.loss.detach().clone();
    correct_ = scored.correct.clone();
  } else {
    loss_.copy_(scored.loss.detach());
    correct_.copy_(scored.correct);
  }
  if (timer) timer->mark(Phase::kOptimizer);
}

bool StaticStep::capture() {
#ifdef LOCKSTEP_HAVE_CUDA
  auto g = std::make_unique<Graph>();
  // Autocast's cache of casted weights would hold tensors of the capture's memory pool past
  // it (PyTorch's graph recipe turns it off for capture).
  const bool cache = at::autocast::is_autocast_cache_enabled();
  at::autocast::set_autocast_cache_enabled(false);
  // The optimizer's state must exist before capture (the warm-up makes it): a state made
  // while capturing holds memory no kernel has written, and its creation would be replayed.
  const size_t states = p_.opt.state().size();
  const auto state_kept = [&] {
    if (p_.opt.state().size() != states)
      throw Error("--train.cuda-graph: optimizer state was created while capturing the step (after " +
                  std::to_string(kWarmupSteps) + " eager steps): rerun with --train.cuda-graph off");
  };
  try {
    // Thread-local: a background thread's CUDA call (the watchdog's event polls) must not
    // invalidate the capture; the training thread's own unsafe calls still fail it.
    g->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
    try {
      body(nullptr);
    } catch (...) {
      try {
        g->capture_end();  // ends the stream's capture; its own error is the same one
      } catch (...) {
      }
      throw;
    }
    g->capture_end();
  } catch (const std::exception& e) {
    g->release_failed();
    at::autocast::set_autocast_cache_enabled(cache);
    state_kept();
    std::string why = e.what();
    why = why.substr(0, why.find('\n'));
    // Several ranks: the others may hold their all-reduces in a graph now; this rank going
    // eager alone would leave the ranks' collectives to match by luck. Fatal on this rank
    // (the run aborts on every rank, naming it).
    if (p_.reducer.world() > 1)
      throw Error(fmt::format("--train.cuda-graph on: the step could not be captured as a CUDA graph on this rank "
                              "({}); with several ranks every rank must replay the same graph: rerun with "
                              "--train.cuda-graph off",
                              why));
    log::warn0(fmt::format("--train.cuda-graph: the step could not be captured as a CUDA graph ({}); it runs "
                           "eagerly instead",
                           why));
    capture_ = false;
    return false;
  }
  at::autocast::set_autocast_cache_enabled(cache);
  state_kept();
  graph_ = std::move(g);
  log::info0(fmt::format("whole-step CUDA graph captured after {} eager steps: each step is now one replay "
                         "(forward, backward and optimizer are timed together as 'forward')",
                         kWarmupSteps));
  return true;
#else
  return false;
#endif
}

StepOutput StaticStep::run(const torch::Tensor& x, const torch::Tensor& y, double lr, StepTimer* timer) {
  {
    torch::NoGradGuard no_grad;
    if (!x_.defined()) {
      x_ = torch::empty_like(x);
      y_ = torch::empty_like(y);
    }
    LOCKSTEP_REQUIRE(x.sizes() == x_.sizes() && y.sizes() == y_.sizes(),
                     "static step: every batch must have the first batch's shape");
    x_.copy_(x);
    y_.copy_(y);
    lr_.fill_(lr);
  }
  ++steps_;
  if (capture_ && !graph_ && steps_ > kWarmupSteps) capture();
  if (graph_) {
#ifdef LOCKSTEP_HAVE_CUDA
    graph_->replay();
#endif
    p_.reducer.watch_replayed("the gradient all-reduces of this process's CUDA graph replay " + std::to_string(steps_));
    if (timer) {
      timer->mark(Phase::kForward);
      timer->mark(Phase::kBackward);
      timer->mark(Phase::kComm);
      timer->mark(Phase::kOptimizer);
    }
  } else {
    body(timer);
  }
  return StepOutput{loss_.clone(), correct_.clone()};
}

}  // namespace lockstep
