// sync_bn: see sync_bn.hpp.
#include "core/model/sync_bn.hpp"

#include <torch/torch.h>

#include "core/dist/communicator.hpp"
#include "core/model/bn_act.hpp"

namespace lockstep {
namespace {

class AllReduceSum : public torch::autograd::Function<AllReduceSum> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, int64_t comm_ptr) {
    ctx->saved_data["comm"] = comm_ptr;
    return reduce(x, comm_ptr);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    return {reduce(grads[0], ctx->saved_data["comm"].toInt()), torch::Tensor()};
  }

 private:
  static torch::Tensor reduce(const torch::Tensor& x, int64_t comm_ptr) {
    auto* comm = reinterpret_cast<Communicator*>(comm_ptr);
    torch::Tensor out = x.to(torch::kFloat).contiguous().clone();
    comm->allreduce_sum(out.data_ptr<float>(), static_cast<size_t>(out.numel()));
    return out;
  }
};

// F(bn) for every BatchNorm under MODULE; how many returned true.
template <typename F>
int count_batchnorms(torch::nn::Module& module, const F& f) {
  int n = 0;
  for (const auto& m : module.modules(/*include_self=*/true))
    if (auto* bn = dynamic_cast<BatchNormImpl*>(m.get()); bn != nullptr && f(*bn)) ++n;
  return n;
}

}  // namespace

torch::Tensor allreduce_sum(const torch::Tensor& x, Communicator& comm) {
  return AllReduceSum::apply(x, reinterpret_cast<int64_t>(&comm));
}

BatchNormImpl::BatchNormImpl(int64_t channels, double momentum, double eps) : momentum_(momentum), eps_(eps) {
  weight_ = register_parameter("weight", torch::ones({channels}));
  bias_ = register_parameter("bias", torch::zeros({channels}));
  running_mean_ = register_buffer("running_mean", torch::zeros({channels}));
  running_var_ = register_buffer("running_var", torch::ones({channels}));
  num_batches_tracked_ = register_buffer("num_batches_tracked", torch::zeros({}, torch::kLong));
}

torch::Tensor BatchNormImpl::forward(const torch::Tensor& x) {
  if (is_training() && comm_ != nullptr && comm_->size() > 1) return forward_synced(x);
  if (is_training()) num_batches_tracked_ += 1;
  return torch::batch_norm(x, weight_, bias_, running_mean_, running_var_, is_training(), momentum_, eps_,
                           /*cudnn_enabled=*/true);
}

std::string BatchNormImpl::why_unfused(const torch::Tensor& x, const torch::Tensor& residual) const {
  if (!fused_) return "not asked (--model.fused-bn)";
  if (!is_training()) return "evaluation";
  if (comm_ != nullptr && comm_->size() > 1) return "synchronised (--model.sync-bn)";
  return bn_act_obstacle({x, residual, weight_, bias_, running_mean_, running_var_, momentum_, eps_});
}

torch::Tensor BatchNormImpl::forward_relu_fused(const torch::Tensor& x, const torch::Tensor& residual) {
  if (!fused_ || !is_training()) return {};
  relu_after_ = true;
  why_unfused_ = why_unfused(x, residual);
  if (!why_unfused_.empty()) return {};
  {
    torch::NoGradGuard no_grad;
    num_batches_tracked_ += 1;
  }
  ran_fused_ = true;
  return bn_act({x, residual, weight_, bias_, running_mean_, running_var_, momentum_, eps_});
}

torch::Tensor BatchNormImpl::forward_relu(const torch::Tensor& x, const torch::Tensor& residual) {
  if (torch::Tensor y = forward_relu_fused(x, residual); y.defined()) return y;
  return torch::relu(residual.defined() ? forward(x) + residual : forward(x));
}

torch::Tensor BatchNormImpl::forward_synced(const torch::Tensor& x) {
  const int64_t channels = x.size(1);
  std::vector<int64_t> dims{0};
  std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
  shape[1] = channels;
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  const torch::Tensor xf = x.to(torch::kFloat);
  const double local_count = static_cast<double>(x.numel() / channels);
  const torch::Tensor packed = torch::cat({xf.sum(dims), (xf * xf).sum(dims),
                                           torch::full({1}, local_count, xf.options())});
  const torch::Tensor total = allreduce_sum(packed, *comm_);
  const torch::Tensor count = total.slice(0, 2 * channels).detach();
  const torch::Tensor mean = total.slice(0, 0, channels) / count;
  const torch::Tensor var = (total.slice(0, channels, 2 * channels) / count - mean * mean).clamp_min(0.0);
  {
    torch::NoGradGuard no_grad;
    // Unbiased variance for the running estimate, as torch does; tensors only, no host sync.
    const torch::Tensor unbiased = var.detach() * count / (count - 1.0).clamp_min(1.0);
    running_mean_.mul_(1.0 - momentum_).add_(mean.detach(), momentum_);
    running_var_.mul_(1.0 - momentum_).add_(unbiased, momentum_);
    num_batches_tracked_ += 1;
  }
  const torch::Tensor scale = torch::rsqrt(var + eps_) * weight_;
  const torch::Tensor y = (xf - mean.view(shape)) * scale.view(shape) + bias_.view(shape);
  return y.to(x.scalar_type());
}

int set_sync_bn(torch::nn::Module& module, Communicator* comm) {
  return count_batchnorms(module, [comm](BatchNormImpl& bn) { return bn.set_comm(comm), true; });
}

int set_fused_bn(torch::nn::Module& module, bool on) {
  return count_batchnorms(module, [on](BatchNormImpl& bn) { return bn.set_fused(on), true; });
}

std::string fused_bn_report(torch::nn::Module& module) {
  int relu = 0, ran = 0;
  std::string first_not;
  for (const auto& item : module.named_modules("", /*include_self=*/true)) {
    const auto* bn = dynamic_cast<const BatchNormImpl*>(item.value().get());
    if (bn == nullptr || !bn->relu_after_) continue;
    ++relu;
    if (bn->ran_fused_) ++ran;
    else if (first_not.empty()) first_not = "; not " + item.key() + ": " + bn->why_unfused_;
  }
  return "fused BatchNorm+ReLU: " + std::to_string(ran) + " of " + std::to_string(relu) +
         " BatchNorm+ReLU layer(s) ran fused" + first_not;
}

}  // namespace lockstep
