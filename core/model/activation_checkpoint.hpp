// activation_checkpoint: trade compute for memory (--model.checkpoint-activations). A
// checkpointed block keeps only its input during forward; backward runs the block again
// with gradients on and back-propagates through that recomputation (PyTorch's
// torch.utils.checkpoint, reentrant form).
//
// 1. forward: the block runs under no-grad; its input is saved, its activations are not.
// 2. backward: the saved input is detached and made to require grad, the block runs again
//    (with the autocast state of the forward pass, so AMP recomputes the same thing), and
//    autograd back-propagates the incoming gradient through it: the block's parameters
//    accumulate their gradients as in an ordinary backward (the gradient hooks fire), and
//    the input's gradient is returned.
// 3. The recomputation must not count twice: the block's buffers (BatchNorm running
//    statistics) are restored after it. Blocks must be deterministic (no dropout inside):
//    the recomputed activations are those of the forward pass.
// A synchronised BatchNorm inside a block runs its collective again in backward, on every
// rank in the same order (autograd's order is the graph's).
#pragma once

#include <torch/nn/module.h>

namespace lockstep {

// A block that can be checkpointed: run() is its forward.
class RecomputableBlock : public torch::nn::Module {
 public:
  virtual torch::Tensor run(const torch::Tensor& x) = 0;
};

// BLOCK.run(X), checkpointed when ON and gradients are being recorded; BLOCK must outlive
// the backward pass (a registered submodule does).
torch::Tensor run_block(RecomputableBlock& block, const torch::Tensor& x, bool on);

}  // namespace lockstep
