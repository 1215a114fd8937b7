// activation_checkpoint: see activation_checkpoint.hpp.
#include "core/model/activation_checkpoint.hpp"

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

namespace lockstep {
namespace {

// Sets the autocast state of a device type for a scope, as the forward pass had it. A scope
// of autocast's own (its thread's nesting count): the low-precision copies of the weights
// it caches (one cache for the process) are dropped when the outermost scope ends. Without
// that they outlived the recomputation, and the next forward pass or recomputation cast
// nothing: it read the weights of before the optimizer step.
class AutocastAs {
 public:
  AutocastAs(c10::DeviceType type, bool on, at::ScalarType dtype)
      : type_(type), was_(at::autocast::is_autocast_enabled(type)), was_dtype_(at::autocast::get_autocast_dtype(type)) {
    at::autocast::set_autocast_enabled(type, on);
    at::autocast::set_autocast_dtype(type, dtype);
    at::autocast::increment_nesting();
  }
  ~AutocastAs() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(type_, was_);
    at::autocast::set_autocast_dtype(type_, was_dtype_);
  }
  AutocastAs(const AutocastAs&) = delete;
  AutocastAs& operator=(const AutocastAs&) = delete;

 private:
  c10::DeviceType type_;
  bool was_;
  at::ScalarType was_dtype_;
};

class Checkpoint : public torch::autograd::Function<Checkpoint> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, int64_t block_ptr) {
    const c10::DeviceType type = x.device().type();
    ctx->saved_data["block"] = block_ptr;
    ctx->saved_data["autocast"] = at::autocast::is_autocast_enabled(type);
    ctx->saved_data["autocast_dtype"] = at::autocast::get_autocast_dtype(type);
    ctx->save_for_backward({x});
    return reinterpret_cast<RecomputableBlock*>(block_ptr)->run(x);  // autograd is off in here
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto* block = reinterpret_cast<RecomputableBlock*>(ctx->saved_data["block"].toInt());
    const torch::Tensor saved = ctx->get_saved_variables()[0];
    const c10::DeviceType type = saved.device().type();
    torch::Tensor x = saved.detach().requires_grad_(true);
    std::vector<torch::Tensor> buffers;
    {
      torch::NoGradGuard no_grad;
      for (const auto& b : block->buffers()) buffers.push_back(b.clone());
    }
    torch::Tensor y;
    {
      torch::AutoGradMode grad_on(true);
      AutocastAs autocast(type, ctx->saved_data["autocast"].toBool(), ctx->saved_data["autocast_dtype"].toScalarType());
      y = block->run(x);
    }
    torch::autograd::backward({y}, {grads[0]});
    {
      // After backward: batch_norm's backward reads the running statistics it saved.
      torch::NoGradGuard no_grad;
      size_t i = 0;
      for (auto& b : block->buffers()) b.copy_(buffers[i++]);
    }
    return {x.grad(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor run_block(RecomputableBlock& block, const torch::Tensor& x, bool on) {
  // An input without gradient (the data) would leave the output without a grad_fn, and
  // the block's parameters without gradients: such a block runs as usual.
  if (!on || !torch::GradMode::is_enabled() || !block.is_training() || !x.requires_grad()) return block.run(x);
  return Checkpoint::apply(x, reinterpret_cast<int64_t>(&block));
}

}  // namespace lockstep
