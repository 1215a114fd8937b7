// max_pool_layer: the max-pool of the built-in conv nets (resnet and r3d stems, cnn, c3d) as a
// module, so that --model.max-pool can choose its implementation per layer as
// --model.fused-bn does for BatchNorm: ATen's max_pool2d / max_pool3d, or lockstep's
// (max_pool.hpp: 1-byte window positions instead of int64 indices) in training where it
// applies. The same values and gradients either way (to float32's rounding: max_pool.hpp).
// It has no state and is not serialised:
// checkpoints are the same with or without it (and as before it existed).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <string>

#include "core/model/max_pool.hpp"

namespace lockstep {

class MaxPoolImpl : public torch::nn::Module {
 public:
  // WINDOW's stride defaults to its kernel, its padding to 0.
  explicit MaxPoolImpl(PoolWindow window);
  torch::Tensor forward(const torch::Tensor& x);
  // Lockstep's kernels in training where max_pool_obstacle finds nothing; ATen's otherwise.
  void set_own(bool on) { own_ = on; }
  bool is_serializable() const override { return false; }

 private:
  PoolWindow window_;
  bool own_ = false;
  // What training passes so far saw: it ran with set_own(true); it ran lockstep's; why not,
  // the first time it did not.
  bool asked_ = false, ran_own_ = false;
  std::string why_not_;
  friend std::string max_pool_report(torch::nn::Module& module);
};
TORCH_MODULE(MaxPool);

// Makes every MaxPool under MODULE run lockstep's kernels (OWN) or ATen's. Returns how many
// layers it found.
int set_max_pool_kernel(torch::nn::Module& module, bool own);
// --model.max-pool lockstep, after a training step: "lockstep max-pool: N of M max-pool
// layer(s) ran lockstep's kernels", and the first that did not with its reason.
std::string max_pool_report(torch::nn::Module& module);

}  // namespace lockstep
