// grad_reducer: see grad_reducer.hpp.
#include "core/dist/grad_reducer.hpp"

#include <ATen/ATen.h>

#include <chrono>

#include "core/base/error.hpp"

namespace lockstep {

GradReducer::GradReducer(std::vector<at::Tensor> params, Communicator& comm, double bucket_mb, bool overlap,
                         WireType wire, bool alone_pass_through)
    : params_(std::move(params)), comm_(comm), overlap_(overlap), wire_(wire),
      pass_through_(alone_pass_through && comm.size() == 1) {
  std::vector<size_t> numel;
  for (const auto& p : params_) {
    LOCKSTEP_REQUIRE(p.scalar_type() == at::kFloat, "gradient reduction supports float32 parameters");
    numel.push_back(static_cast<size_t>(p.numel()));
  }
  buckets_ = plan_buckets(numel, sizeof(float), bucket_mb);  // planned also when passing through: reported
  const auto options = params_.empty() ? at::TensorOptions().dtype(at::kFloat) : params_[0].options();
  bucket_of_.resize(params_.size());
  slot_of_.resize(params_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) {
    if (pass_through_) break;  // no buffers: nothing is copied
    buffers_.push_back(at::empty({static_cast<int64_t>(buckets_[b].elems)}, options));
    if (wire_ != WireType::kF32)
      wire_buffers_.push_back(at::empty_like(buffers_.back(), options.dtype(wire_ == WireType::kBF16 ? at::kBFloat16 : at::kHalf)));
    for (size_t j = 0; j < buckets_[b].params.size(); ++j) {
      bucket_of_[buckets_[b].params[j]] = b;
      slot_of_[buckets_[b].params[j]] = j;
    }
  }
  inv_world_ = at::full({}, 1.0 / comm_.size(), options);
  filled_.assign(params_.size(), 0);
  remaining_.assign(buckets_.size(), 0);
  if (!overlap_ || pass_through_) return;
  for (size_t i = 0; i < params_.size(); ++i)
    hooks_.push_back(params_[i].register_hook([this, i](const at::Tensor& grad) { on_grad(i, grad); }));
}

GradReducer::~GradReducer() {
  for (size_t i = 0; i < hooks_.size(); ++i) params_[i].remove_hook(hooks_[i]);
}

void GradReducer::prepare(bool sync) {
  std::lock_guard<std::mutex> lock(mu_);
  sync_ = sync;
  std::fill(filled_.begin(), filled_.end(), 0);
  for (size_t b = 0; b < buckets_.size(); ++b) remaining_[b] = buckets_[b].params.size();
  next_launch_ = 0;
  launched_in_backward_ = 0;
}

// Copies (GRAD + what earlier micro-steps accumulated in .grad) / world into the slot.
void GradReducer::copy_in(size_t i, const at::Tensor* grad) {
  at::NoGradGuard no_grad;
  const at::Tensor& p = params_[i];
  const Bucket& b = buckets_[bucket_of_[i]];
  at::Tensor view = buffers_[bucket_of_[i]].narrow(0, static_cast<int64_t>(b.offsets[slot_of_[i]]), p.numel());
  const at::Tensor& acc = p.grad();
  if (grad && grad->defined()) {
    at::mul_out(view, grad->reshape({-1}), inv_world_);
    if (acc.defined()) view.add_(acc.reshape({-1}), 1.0 / comm_.size());
  } else if (acc.defined()) {
    at::mul_out(view, acc.reshape({-1}), inv_world_);
  } else {
    view.zero_();  // a parameter unused this step still takes part in the reduction
  }
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

void GradReducer::on_grad(size_t i, const at::Tensor& grad) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!sync_ || filled_[i]) return;
  copy_in(i, &grad);
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
    if (!filled_[i]) copy_in(i, nullptr);  // not watched, or no gradient this step
  launch_ready();
  const auto t0 = std::chrono::steady_clock::now();
  comm_.wait_all();
  exposed_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (after_wait) after_wait();
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor p = params_[i];
    const size_t k = bucket_of_[i];
    const at::Tensor& reduced = wire_buffers_.empty() ? buffers_[k] : wire_buffers_[k];  // copy_ widens 16-bit
    at::Tensor avg = reduced.narrow(0, static_cast<int64_t>(buckets_[k].offsets[slot_of_[i]]), p.numel()).view(p.sizes());
    if (!p.grad().defined()) p.mutable_grad() = at::empty_like(p);
    p.mutable_grad().copy_(avg);
  }
  sync_ = false;
}

void GradReducer::average_gradients() {
  prepare(true);  // nothing is filled yet: finish() takes every gradient from .grad
  finish();
}

}  // namespace lockstep
