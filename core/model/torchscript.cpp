// torchscript: --model torchscript:PATH, a module scripted in Python, trained as a Net.
// Its parameters and buffers are registered on the Net under their dotted names with '.'
// replaced by '__' (the same tensors, so the optimizer, the reducer and checkpoints see
// what the scripted forward uses). Its forward's signature says how it is called:
//   forward(x) -> logits [N, classes]                    classes, fixed-length samples
//   forward(x, lengths) -> logits [N, classes]            classes, ragged samples
//   forward(x, lengths) -> (logits [N, T, C], out_lengths) CTC (C = tokens + 1, blank last)
// lengths: int64 [N] on the CPU. Checked on a probe batch before step 1 against the data.
#include <torch/script.h>
#include <torch/torch.h>

#include "core/base/error.hpp"
#include "core/model/registry.hpp"
#include "io/util/file_util.hpp"

namespace lockstep {
namespace {

std::string flat_name(std::string name) {
  for (size_t i = 0; (i = name.find('.', i)) != std::string::npos; i += 2) name.replace(i, 1, "__");
  return name;
}

// How the scripted forward is called, read from its signature: (x) or (x, lengths), and
// a tensor (class logits) or a (logits [N, T, C], out_lengths [N]) tuple (CTC).
struct ScriptSignature {
  bool takes_lengths = false, returns_tuple = false;
};

class ScriptNet final : public Net {
 public:
  ScriptNet(torch::jit::Module module, ScriptSignature sig) : module_(std::move(module)), sig_(sig) {
    for (const auto& p : module_.named_parameters(/*recurse=*/true)) register_parameter(flat_name(p.name), p.value);
    for (const auto& b : module_.named_buffers(/*recurse=*/true))
      register_buffer(flat_name(b.name), b.value);
  }
  torch::Tensor forward(torch::Tensor x) override {
    if (!sig_.takes_lengths) return module_.forward({x}).toTensor();
    const torch::Tensor full = torch::full({x.size(0)}, x.size(-1), torch::kLong);
    torch::Tensor out_lengths;
    return sig_.returns_tuple ? forward_sequence(x, full, &out_lengths) : forward_ragged(x, full);
  }
  bool sequence_output() const override { return sig_.returns_tuple; }
  bool takes_ragged() const override { return sig_.takes_lengths && !sig_.returns_tuple; }
  // LENGTHS stay CPU int64, as lockstep's own models get them (pack_padded_sequence wants that).
  torch::Tensor forward_ragged(torch::Tensor x, const torch::Tensor& lengths) override {
    return module_.forward({x, lengths}).toTensor();
  }
  torch::Tensor forward_sequence(torch::Tensor x, const torch::Tensor& lengths, torch::Tensor* out_lengths) override {
    const auto out = module_.forward({x, lengths}).toTuple();
    LOCKSTEP_REQUIRE(out->elements().size() == 2, "a TorchScript CTC model must return (logits, out_lengths)");
    *out_lengths = out->elements()[1].toTensor().to(torch::kCPU, torch::kLong);
    return out->elements()[0].toTensor();
  }
  void train(bool on = true) override {
    Net::train(on);
    module_.train(on);
  }
  void to(torch::Device device, bool non_blocking = false) override {
    module_.to(device, non_blocking);  // moves the shared tensors in place
  }

 private:
  torch::jit::Module module_;
  ScriptSignature sig_;
};

ScriptSignature signature_of(const torch::jit::Module& module, const std::string& what) {
  const c10::FunctionSchema& schema = module.get_method("forward").function().getSchema();
  const size_t inputs = schema.arguments().size() - 1;  // after self
  if (inputs != 1 && inputs != 2)
    throw UsageError(what + ": forward takes " + std::to_string(inputs) +
                     " inputs; lockstep calls forward(x) or forward(x, lengths)");
  ScriptSignature sig;
  sig.takes_lengths = inputs == 2;
  sig.returns_tuple = !schema.returns().empty() && schema.returns()[0].type()->kind() == c10::TypeKind::TupleType;
  if (sig.returns_tuple && !sig.takes_lengths)
    throw UsageError(what + ": forward(x) returns a tuple; a CTC model takes (x, lengths) and returns "
                     "(logits [N, T, C], out_lengths [N])");
  return sig;
}

// The probe's answer checked against what DATA needs; throws a one-line UsageError.
void check_outputs(const std::string& what, const io::DatasetSpec& spec, const ScriptSignature& sig,
                   const torch::Tensor& out, const torch::Tensor& out_lengths, const std::vector<int64_t>& probe) {
  if (spec.sequence_outputs()) {
    const int64_t classes = static_cast<int64_t>(spec.tokens.size()) + 1;
    if (!sig.takes_lengths || !sig.returns_tuple)
      throw UsageError(what + ": dataset '" + spec.name + "' has sequence targets (CTC): forward must take (x, lengths) "
                       "and return (logits [N, T, " + std::to_string(classes) + "], out_lengths [N])");
    if (out.dim() != 3 || out.size(0) != 2 || out.size(2) != classes)
      throw UsageError(what + ": forward returns logits of shape " + c10::str(out.sizes()) + " for a batch of 2, expected [2, T, " +
                       std::to_string(classes) + "] (tokens + blank of dataset '" + spec.name + "')");
    if (out_lengths.dim() != 1 || out_lengths.size(0) != 2 || out_lengths.min().item<int64_t>() < 1 ||
        out_lengths.max().item<int64_t>() > out.size(1))
      throw UsageError(what + ": forward returns out_lengths " + c10::str(out_lengths.sizes()) +
                       " that are not 2 frame counts in [1, " + std::to_string(out.size(1)) + "]");
    return;
  }
  if (sig.returns_tuple)
    throw UsageError(what + ": forward returns a tuple (a CTC model), but dataset '" + spec.name + "' has class labels");
  if (out.dim() != 2 || out.size(0) != 2 || out.size(1) != spec.num_classes)
    throw UsageError(what + ": forward returns shape " + c10::str(out.sizes()) + " for a batch of shape " + c10::str(probe) +
                     ", expected [2, " + std::to_string(spec.num_classes) + "] (classes of dataset '" + spec.name + "')");
}

}  // namespace

std::shared_ptr<Net> load_script_model(const std::string& path, const io::DatasetSpec& spec) {
  const std::string what = "model torchscript:" + path;
  torch::jit::Module module;
  try {
    io::require_regular_file(path);
  } catch (const Error& e) {
    throw UsageError(what + ": " + e.what());
  }
  try {
    module = torch::jit::load(path);
  } catch (const c10::Error& e) {
    throw UsageError(what + ": cannot load a TorchScript module (" + std::string(e.what_without_backtrace()).substr(0, 200) +
                     ")");
  }
  const ScriptSignature sig = signature_of(module, what);
  auto net = std::make_shared<ScriptNet>(std::move(module), sig);
  if (net->parameters().empty()) throw UsageError(what + ": the module has no parameters to train");
  std::vector<int64_t> probe_shape{2};
  probe_shape.insert(probe_shape.end(), spec.sample_shape.begin(), spec.sample_shape.end());
  torch::Tensor out, out_lengths;
  try {
    torch::NoGradGuard no_grad;
    net->eval();
    const torch::Tensor x = torch::zeros(probe_shape);
    const torch::Tensor full = torch::full({2}, probe_shape.back(), torch::kLong);
    if (sig.returns_tuple && sig.takes_lengths) {
      out = net->forward_sequence(x, full, &out_lengths);
    } else {
      out = sig.takes_lengths ? net->forward_ragged(x, full) : net->forward(x);
    }
    net->train();
  } catch (const c10::Error& e) {
    throw UsageError(what + ": forward fails on a batch of shape " + c10::str(probe_shape) +
                     (sig.takes_lengths ? " with lengths" : "") + " (" +
                     std::string(e.what_without_backtrace()).substr(0, 300) + ")");
  }
  check_outputs(what, spec, sig, out, out_lengths, probe_shape);
  return net;
}

}  // namespace lockstep
