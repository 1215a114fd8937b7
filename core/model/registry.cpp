// registry: see registry.hpp. The factory; each family lives in its own file (cnn, resnet,
// mlp, cnn1d, lmu, gru, c3d, r3d, torchscript).
#include "core/model/registry.hpp"

#include "core/base/error.hpp"

namespace lockstep {

torch::Tensor Net::forward_sequence(torch::Tensor, const torch::Tensor&, torch::Tensor*) {
  throw UsageError("this model classifies whole samples; it has no per-frame (CTC) output");
}

torch::Tensor Net::forward_ragged(torch::Tensor, const torch::Tensor&) {
  throw UsageError("this model needs fixed-length samples");
}

torch::Tensor Net::formatted(const torch::Tensor& x) const {
  if (!channels_last_ || (x.dim() != 4 && x.dim() != 5)) return x;
  const auto format = x.dim() == 4 ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::ChannelsLast3d;
  // Not contiguous(format): a one-channel batch already counts as channels-last contiguous
  // and would keep NCHW strides, which the kernels read as NCHW (memory_format.hpp).
  return x.suggest_memory_format() == format ? x : x.to(x.options(), false, false, format);
}

torch::Tensor class_logits(Net& net, const torch::Tensor& x, const torch::Tensor& lengths) {
  return lengths.defined() ? net.forward_ragged(x, lengths) : net.forward(x);
}

namespace {

std::shared_ptr<Net> make_any(const ModelOptions& opt, const io::DatasetSpec& spec) {
  const std::string script = "torchscript:";
  if (opt.name.compare(0, script.size(), script) == 0) return load_script_model(opt.name.substr(script.size()), spec);
  if (opt.name == "cnn") return make_cnn(opt, spec);
  if (opt.name == "resnet") return make_resnet(opt, spec);
  if (opt.name == "mlp") return make_mlp(opt, spec);
  if (opt.name == "cnn1d") return make_cnn1d(opt, spec);
  if (opt.name == "lmu") return make_lmu(opt, spec);
  if (opt.name == "gru") return make_gru(opt, spec);
  if (opt.name == "c3d") return make_c3d(opt, spec);
  if (opt.name == "r3d") return make_r3d(opt, spec);
  throw UsageError("unknown model '" + opt.name +
                   "' (built in: cnn, resnet, mlp, cnn1d, lmu, gru, c3d, r3d; or torchscript:PATH)");
}

}  // namespace

std::shared_ptr<Net> make_model(const ModelOptions& opt, const io::DatasetSpec& spec) {
  if (opt.width < 0) throw UsageError("--model.width must be >= 0");
  auto net = make_any(opt, spec);
  if (opt.checkpoint_activations && !net->checkpoints_activations())
    throw UsageError("--model.checkpoint-activations is built into resnet, r3d and c3d, not " + opt.name);
  if (spec.sequence_outputs() && !net->sequence_output())
    throw UsageError("--model.name " + opt.name + " classifies whole samples, but dataset '" + spec.name +
                     "' has sequence targets (CTC): use a sequence model (gru, lmu)");
  if (spec.ragged && !spec.sequence_outputs() && !net->takes_ragged())
    throw UsageError("--model.name " + opt.name + " needs fixed-length samples, but dataset '" + spec.name +
                     "' is ragged (variable-length series): use cnn1d or lmu");
  if (!spec.sequence_outputs() && net->sequence_output())
    throw UsageError("--model.name " + opt.name + " is a sequence (CTC) model, but dataset '" + spec.name +
                     "' has class labels, not sequence targets");
  return net;
}

}  // namespace lockstep
