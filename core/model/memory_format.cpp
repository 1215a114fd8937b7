// memory_format: see memory_format.hpp.
#include "core/model/memory_format.hpp"

#include <torch/torch.h>

#include "core/base/error.hpp"

namespace lockstep {

namespace {

template <size_t D>
bool strided_1x1(const torch::ExpandingArray<D>& kernel, const torch::ExpandingArray<D>& stride) {
  bool ones = true, strided = false;
  for (size_t i = 0; i < D; ++i) {
    ones = ones && (*kernel)[i] == 1;
    strided = strided || (*stride)[i] > 1;
  }
  return ones && strided;
}

template <size_t D>
std::string describe(const std::string& name, const torch::ExpandingArray<D>& stride, int64_t in_channels) {
  std::string s;
  for (size_t i = 0; i < D; ++i) s += (i ? "x" : "") + std::to_string((*stride)[i]);
  return "layer " + name + " is a 1x1 convolution with stride " + s + " and " + std::to_string(in_channels) +
         " input channel(s), whose weight gradient LibTorch's CPU kernels (oneDNN) compute wrongly in "
         "channels-last, corrupting memory (oneDNN issue 6035; fewer than 16 input channels)";
}

}  // namespace

std::string channels_last_hazard(const Net& model) {
  constexpr int64_t kMinChannels = 16;
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    if (const auto* c = item.value()->as<torch::nn::Conv2d>()) {
      const auto& o = c->options;
      if (strided_1x1(o.kernel_size(), o.stride()) && o.in_channels() < kMinChannels)
        return describe(item.key(), o.stride(), o.in_channels());
    } else if (const auto* c3 = item.value()->as<torch::nn::Conv3d>()) {
      const auto& o = c3->options;
      if (strided_1x1(o.kernel_size(), o.stride()) && o.in_channels() < kMinChannels)
        return describe(item.key(), o.stride(), o.in_channels());
    }
  }
  return "";
}

bool wants_channels_last(MemoryFormat f, const Net& model, const std::string& name, bool cuda,
                         std::string* note) {
  switch (f) {
    case MemoryFormat::kContiguous:
      return false;
    case MemoryFormat::kChannelsLast: {
      if (!model.conv_net())
        throw UsageError("--model.memory-format channels-last is for conv nets over images or clips (cnn, resnet, "
                         "c3d, r3d), not model " + name);
      const std::string hazard = cuda ? std::string() : channels_last_hazard(model);
      if (!hazard.empty())
        throw UsageError("--model.memory-format channels-last on CPU: " + hazard +
                         "; use auto or contiguous (or a width of at least 16)");
      return true;
    }
    case MemoryFormat::kAuto:
      break;
  }
  if (!model.conv_net()) return false;
  if (cuda) return true;
  const std::string hazard = channels_last_hazard(model);
  if (hazard.empty()) return true;
  if (note) *note = "model " + name + " runs contiguous (NCHW) on CPU, not channels-last: " + hazard;
  return false;
}

int use_channels_last(Net& model) {
  torch::NoGradGuard no_grad;
  int changed = 0;
  const auto relayout = [&](torch::Tensor& t) {
    if (t.dim() != 4 && t.dim() != 5) return;
    const auto format = t.dim() == 4 ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::ChannelsLast3d;
    // Strides the kernels read as channels-last: contiguous(format) keeps NCHW strides for a
    // tensor with one input channel (a first conv's weight), which then runs NCHW.
    if (t.suggest_memory_format() == format) return;
    t.set_data(t.to(t.options(), false, false, format));
    ++changed;
  };
  for (auto& p : model.parameters()) relayout(p);
  for (auto& b : model.buffers()) relayout(b);
  model.set_channels_last(true);
  return changed;
}

int use_contiguous(Net& model) {
  torch::NoGradGuard no_grad;
  int changed = 0;
  const auto relayout = [&](torch::Tensor& t) {
    if ((t.dim() != 4 && t.dim() != 5) || t.is_contiguous()) return;
    t.set_data(t.contiguous());
    ++changed;
  };
  for (auto& p : model.parameters()) relayout(p);
  for (auto& b : model.buffers()) relayout(b);
  model.set_channels_last(false);
  return changed;
}

}  // namespace lockstep
