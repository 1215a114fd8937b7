// grad_reducer: see grad_reducer.hpp.
#include "core/dist/grad_reducer.hpp"

#include <ATen/ATen.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <chrono>
#include <unordered_set>

#include "core/base/error.hpp"

namespace lockstep {

namespace {

// Runs FN after an AccumulateGrad node has accumulated its parameter's gradient.
struct AfterAccumulate final : torch::autograd::FunctionPostHook {
  explicit AfterAccumulate(std::function<void()> fn) : fn_(std::move(fn)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    fn_();
    return outputs;
  }
  std::function<void()> fn_;
};

}  // namespace

GradReducer::GradReducer(std::vector<at::Tensor> params, Communicator& comm, double bucket_mb, bool overlap,
                         WireType wire, bool alone_pass_through)
    : params_(std::move(params)), comm_(comm), overlap_(overlap), wire_(wire),
      pass_through_(alone_pass_through && comm.size() == 1) {
  std::vector<size_t> numel;
  std::unordered_set<const void*> seen;
  for (const at::Tensor& p : params_) {
    LOCKSTEP_REQUIRE(p.scalar_type() == at::kFloat, "gradient reduction supports float32 parameters");
    // One tensor twice would get two slots filled by one gradient, the second from the first.
    LOCKSTEP_REQUIRE(seen.insert(p.unsafeGetTensorImpl()).second, "gradient reduction: a parameter is listed twice");
    numel.push_back(static_cast<size_t>(p.numel()));
  }
  buckets_ = plan_buckets(numel, sizeof(float), bucket_mb);  // planned also when passing through: reported
  const auto options = params_.empty() ? at::TensorOptions().dtype(at::kFloat) : params_[0].options();
  bucket_of_.resize(params_.size());
  slots_.resize(params_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) {
    if (pass_through_) break;  // no buffers: nothing is copied
    const at::Tensor flat = at::empty({static_cast<int64_t>(buckets_[b].elems)}, options);
    buffers_.push_back(flat);
    if (wire_ != WireType::kF32)
      wire_buffers_.push_back(at::empty_like(flat, options.dtype(wire_ == WireType::kBF16 ? at::kBFloat16 : at::kHalf)));
    for (size_t j = 0; j < buckets_[b].params.size(); ++j) bucket_of_[buckets_[b].params[j]] = b;
  }
  inv_world_ = at::full({}, 1.0 / comm_.size(), options);
  filled_.assign(params_.size(), 0);
  remaining_.assign(buckets_.size(), 0);
}

// At the first step, so after a resume has loaded the parameters (a checkpoint's strides
// are the ones they keep). A dense parameter's slot has its strides: they address exactly
// numel elements. Another (a strided view as parameter) gets a contiguous slot: right,
// though its .grad then differs in layout from it. detach(): the same memory, not an
// autograd view (an optimizer's zero_grad calls detach_() on a .grad, which autograd
// refuses for a view).
void GradReducer::make_slots() {
  if (pass_through_ || slots_made_) return;
  for (size_t b = 0; b < buckets_.size(); ++b)
    for (size_t j = 0; j < buckets_[b].params.size(); ++j) {
      const size_t i = buckets_[b].params[j];
      const at::Tensor& p = params_[i];
      const at::Tensor& flat = buffers_[b];
      const int64_t at = static_cast<int64_t>(buckets_[b].offsets[j]);
      slots_[i] = (p.is_non_overlapping_and_dense()
                       ? flat.as_strided(p.sizes(), p.strides(), flat.storage_offset() + at)
                       : flat.narrow(0, at, p.numel()).view(p.sizes()))
                      .detach();
    }
  slots_made_ = true;
}

// On the training thread, in the step: a node made by this step's forward pass, or made
// here, belongs to the current stream. One made elsewhere (kept alive by something else)
// would run every accumulation on its own stream: refused, naming the parameter.
void GradReducer::attach_hooks() {
  for (size_t i = 0; i < params_.size(); ++i) {
    std::shared_ptr<torch::autograd::Node> acc = torch::autograd::impl::grad_accumulator(params_[i]);
    LOCKSTEP_REQUIRE(acc != nullptr, "gradient reduction: parameter " + std::to_string(i) + " does not require a gradient");
    if (const std::optional<c10::Stream> s = acc->stream()) {
      const c10::Stream current = c10::impl::getDeviceGuardImpl(s->device_type())->getStream(s->device());
      LOCKSTEP_REQUIRE(*s == current, "gradient reduction: parameter " + std::to_string(i) +
                                          "'s gradient accumulates on another stream than the step's");
    }
    hooks_.push_back(acc->add_post_hook(std::make_unique<AfterAccumulate>([this, i] { on_grad(i); })));
    accumulators_.push_back(std::move(acc));
  }
}

GradReducer::~GradReducer() {
  for (size_t k = 0; k < hooks_.size(); ++k) accumulators_[k]->del_post_hook(hooks_[k]);
}

void GradReducer::prepare(bool sync) {
  std::lock_guard<std::mutex> lock(mu_);
  make_slots();
  if (overlap_ && !pass_through_ && accumulators_.empty()) attach_hooks();
  begin_step(sync);
}

void GradReducer::begin_step(bool sync) {
  sync_ = sync;
  std::fill(filled_.begin(), filled_.end(), 0);
  for (size_t b = 0; b < buckets_.size(); ++b) remaining_[b] = buckets_[b].params.size();
  next_launch_ = 0;
  launched_in_backward_ = 0;
}

// The parameter's gradient (everything accumulated this step) / world into its slot, which
// becomes its .grad. A .grad that already is the slot is scaled in place.
void GradReducer::fill_slot(size_t i) {
  at::NoGradGuard no_grad;
  at::Tensor& slot = slots_[i];
  at::Tensor& grad = params_[i].mutable_grad();
  if (!grad.defined())
    slot.zero_();  // a parameter unused this step still takes part in the reduction
  else
    at::mul_out(slot, grad, inv_world_);  // any strides in, the parameter's out; in place when grad is slot
  grad = slot;
  filled_[i] = 1;
  --remaining_[bucket_of_[i]];
}

size_t GradReducer::wire_bytes_per_step() const {
  size_t elems = 0;
  for (const Bucket& b : buckets_) elems += b.elems;
  return elems * lockstep::wire_bytes(wire_);
}

void GradReducer::launch_ready() {
  while (next_launch_ < buckets_.size() && remaining_[next_launch_] == 0) {
    const size_t k = next_launch_;
    void* data = buffers_[k].data_ptr<float>();
    if (wire_ != WireType::kF32) {
      at::NoGradGuard no_grad;
      wire_buffers_[k].copy_(buffers_[k]);  // round to nearest even; on NCCL, on the compute stream
      data = wire_buffers_[k].data_ptr();
    }
    comm_.start_allreduce(data, buckets_[k].elems, wire_,
                          "gradient bucket " + std::to_string(k) + "/" + std::to_string(buckets_.size()));
    ++next_launch_;
  }
}

void GradReducer::on_grad(size_t i) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!sync_) return;
  // Accumulated again after its slot was filled: in place into a bucket that may be on the
  // wire, and without the 1/world. The old contribution cannot be told from the new.
  LOCKSTEP_REQUIRE(!filled_[i], "gradient reduction: parameter " + std::to_string(i) +
                                    " received a second gradient in one step (two backward passes before one "
                                    "reduction, or a parameter shared across a checkpointed block)");
  fill_slot(i);
  const size_t before = next_launch_;
  launch_ready();
  launched_in_backward_ += static_cast<int>(next_launch_ - before);
}

void GradReducer::finish(const std::function<void()>& after_wait) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!sync_) {
    if (after_wait) after_wait();
    return;
  }
  if (pass_through_) {
    if (after_wait) after_wait();
    at::NoGradGuard no_grad;
    for (auto& p : params_)
      if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
    sync_ = false;
    return;
  }
  for (size_t i = 0; i < params_.size(); ++i)
    if (!filled_[i]) fill_slot(i);  // not watched, or no gradient this step
  launch_ready();
  const auto t0 = std::chrono::steady_clock::now();
  comm_.wait_all();
  exposed_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (after_wait) after_wait();
  if (!wire_buffers_.empty()) {
    at::NoGradGuard no_grad;
    for (size_t k = 0; k < buffers_.size(); ++k) buffers_[k].copy_(wire_buffers_[k]);  // widened, bucket by bucket
  }
  sync_ = false;  // every .grad is its slot: the averages are already where the optimizer reads them
}

void GradReducer::watch_replayed(const std::string& what) {
  if (!pass_through_) comm_.watch_queued(what);
}

void GradReducer::average_gradients() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    make_slots();
    begin_step(true);  // nothing is filled yet: finish() takes every gradient from .grad (no hooks attached here)
  }
  finish();
}

}  // namespace lockstep
