// onednn_guard: see onednn_guard.hpp.
#include "core/model/onednn_guard.hpp"

#include <ATen/Context.h>
#include <torch/nn/modules/conv.h>

namespace lockstep {

std::string onednn_obstacle(const torch::nn::Module& model, const torch::Device& device, Amp amp) {
  if (!device.is_cpu() || amp != Amp::kBf16) return "";
  for (const auto& m : model.modules(/*include_self=*/true))
    if (m->as<torch::nn::Conv3d>() != nullptr)
      return "oneDNN's bfloat16 3-d convolution gives wrong weight gradients on some CPUs (PyTorch 2.11): "
             "ATen's own kernels run the model's 3-d convolutions under --train.amp bf16 on the CPU (slower)";
  return "";
}

std::string keep_onednn_off_where_wrong(const torch::nn::Module& model, const torch::Device& device, Amp amp) {
  std::string why = onednn_obstacle(model, device, amp);
  if (!why.empty()) at::globalContext().setUserEnabledMkldnn(false);
  return why;
}

}  // namespace lockstep
