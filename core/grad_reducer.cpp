// grad_reducer: see grad_reducer.hpp.
#include "core/grad_reducer.hpp"

#include <ATen/ATen.h>

#include <chrono>

#include "core/error.hpp"

namespace lockstep {

GradReducer::GradReducer(std::vector<at::Tensor> params, Communicator& comm, double bucket_mb)
    : params_(std::move(params)), comm_(comm) {
  std::vector<size_t> numel;
  for (const auto& p : params_) {
    LOCKSTEP_REQUIRE(p.scalar_type() == at::kFloat, "gradient reduction supports float32 parameters");
    numel.push_back(static_cast<size_t>(p.numel()));
  }
  buckets_ = plan_buckets(numel, sizeof(float), bucket_mb);
  const auto options = params_.empty() ? at::TensorOptions().dtype(at::kFloat) : params_[0].options();
  for (const Bucket& b : buckets_) buffers_.push_back(at::empty({static_cast<int64_t>(b.elems)}, options));
  inv_world_ = at::full({}, 1.0 / comm_.size(), options);
}

void GradReducer::average_gradients() {
  at::NoGradGuard no_grad;
  for (size_t bi = 0; bi < buckets_.size(); ++bi) {
    const Bucket& b = buckets_[bi];
    at::Tensor& buf = buffers_[bi];
    for (size_t j = 0; j < b.params.size(); ++j) {
      const at::Tensor& p = params_[b.params[j]];
      at::Tensor view = buf.narrow(0, static_cast<int64_t>(b.offsets[j]), p.numel());
      const at::Tensor& g = p.grad();
      if (g.defined()) {
        at::mul_out(view, g.reshape({-1}), inv_world_);
      } else {
        view.zero_();  // a parameter unused this step still takes part in the reduction
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    comm_.allreduce_sum(buf.data_ptr<float>(), b.elems);
    comm_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (size_t j = 0; j < b.params.size(); ++j) {
      at::Tensor p = params_[b.params[j]];
      at::Tensor view = buf.narrow(0, static_cast<int64_t>(b.offsets[j]), p.numel()).view(p.sizes());
      if (p.grad().defined()) {
        p.mutable_grad().copy_(view);
      } else {
        p.mutable_grad() = view.clone();
      }
    }
  }
}

void broadcast_tensors(const std::vector<at::Tensor>& tensors, Communicator& comm) {
  at::NoGradGuard no_grad;  // parameters are autograd leaves: overwrite them outside autograd
  size_t total = 0;
  for (const auto& t : tensors) total += static_cast<size_t>(t.numel());
  if (total == 0) return;
  at::Tensor flat = at::empty({static_cast<int64_t>(total)}, tensors[0].options().dtype(at::kFloat));
  int64_t off = 0;
  for (const auto& t : tensors) {
    flat.narrow(0, off, t.numel()).copy_(t.reshape({-1}));
    off += t.numel();
  }
  comm.broadcast(flat.data_ptr<float>(), total, 0);
  off = 0;
  for (const auto& t : tensors) {
    // Integer buffers (BatchNorm's num_batches_tracked) round-trip exactly through float
    // below 2^24, far beyond any step count that matters here.
    at::Tensor dst = t;
    dst.copy_(flat.narrow(0, off, t.numel()).view(t.sizes()));
    off += t.numel();
  }
}

}  // namespace lockstep
