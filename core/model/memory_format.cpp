// memory_format: see memory_format.hpp.
#include "core/model/memory_format.hpp"

#include <torch/torch.h>

#include "core/base/error.hpp"

namespace lockstep {

bool wants_channels_last(MemoryFormat f, const Net& model, const std::string& name, bool cuda, bool amp) {
  switch (f) {
    case MemoryFormat::kContiguous:
      return false;
    case MemoryFormat::kChannelsLast:
      if (!model.conv_net())
        throw UsageError("--model.memory-format channels-last is for conv nets over images or clips (cnn, resnet, "
                         "c3d, r3d), not model " + name);
      return true;
    case MemoryFormat::kAuto:
      break;
  }
  return model.conv_net() && (!cuda || amp);
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

}  // namespace lockstep
