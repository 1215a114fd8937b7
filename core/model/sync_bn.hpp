// sync_bn: the BatchNorm every built-in model uses, with optional cross-rank statistics
// (--model.sync-bn), and the differentiable all-reduce it is built on.
//
// BatchNorm keeps torch's parameter and buffer names (weight, bias, running_mean,
// running_var, num_batches_tracked), so checkpoints do not depend on --model.sync-bn.
// Synchronised (training mode, a communicator set):
// 1. each rank sums x and x^2 per channel over its batch and counts its values;
// 2. one all-reduce of [sums, squares, count] gives the global batch's mean and variance;
// 3. every rank normalises with them — what one rank with the whole global batch computes;
// 4. backward: the all-reduce's gradient is the all-reduce of the gradients, so the
//    input gradients also match the single-rank computation.
// Collective in forward and backward when synchronised: every rank runs the same layers
// in the same order (autograd's order is the graph's, the same on every rank).
// Fused (--model.fused-bn, set_fused_bn): forward_relu runs BatchNorm, the residual add and
// the ReLU as one node (bn_act.hpp) where it can; the state and checkpoints are the same.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <string>

namespace lockstep {

class Communicator;

class BatchNormImpl : public torch::nn::Module {
 public:
  explicit BatchNormImpl(int64_t channels, double momentum = 0.1, double eps = 1e-5);
  torch::Tensor forward(const torch::Tensor& x);  // [N, C, ...]
  void set_comm(Communicator* comm) { comm_ = comm; }
  // relu(forward(x) [+ residual]): one fused node (bn_act.hpp) where fuses(); otherwise the
  // separate operations, exactly as before.
  torch::Tensor forward_relu(const torch::Tensor& x, const torch::Tensor& residual = {});
  // The fused node where it applies, else an undefined tensor and nothing run. In training
  // with set_fused(true) it notes that a ReLU follows this layer, whether it ran fused and
  // why not (fused_bn_report). forward_relu and bn_relu_max_pool (layers.hpp) decide here.
  torch::Tensor forward_relu_fused(const torch::Tensor& x, const torch::Tensor& residual = {});
  // Whether forward_relu takes the fused node: set_fused(true), training, not synchronised,
  // and bn_act_obstacle finds nothing.
  bool fuses(const torch::Tensor& x, const torch::Tensor& residual = {}) const { return why_unfused(x, residual).empty(); }
  void set_fused(bool on) { fused_ = on; }

 private:
  torch::Tensor forward_synced(const torch::Tensor& x);
  std::string why_unfused(const torch::Tensor& x, const torch::Tensor& residual) const;  // "": fuses

  double momentum_, eps_;
  Communicator* comm_ = nullptr;
  bool fused_ = false;
  // What training passes so far saw: a ReLU after this layer; it ran fused; why not.
  bool relu_after_ = false, ran_fused_ = false;
  std::string why_unfused_;
  friend std::string fused_bn_report(torch::nn::Module& module);
  torch::Tensor weight_, bias_, running_mean_, running_var_, num_batches_tracked_;
};
TORCH_MODULE(BatchNorm);

// Sum of X over all ranks, differentiable (backward: the sum of the gradients).
// X must be float32 on the communicator's device. Collective.
torch::Tensor allreduce_sum(const torch::Tensor& x, Communicator& comm);

// Makes every BatchNorm under MODULE synchronise through COMM (nullptr: local again).
// Returns how many layers it found.
int set_sync_bn(torch::nn::Module& module, Communicator* comm);

// Makes every BatchNorm under MODULE fuse its ReLU (forward_relu) or not. Returns how many
// layers it found.
int set_fused_bn(torch::nn::Module& module, bool on);
// --model.fused-bn on, after a training step: "fused BatchNorm+ReLU: N of M BatchNorm+ReLU
// layer(s) ran fused", and the first that did not with its reason.
std::string fused_bn_report(torch::nn::Module& module);

}  // namespace lockstep
