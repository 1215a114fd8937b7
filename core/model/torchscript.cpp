// torchscript: --model torchscript:PATH, a module scripted in Python, trained as a Net.
// Its parameters and buffers are registered on the Net under their dotted names with '.'
// replaced by '__' (the same tensors, so the optimizer, the reducer and checkpoints see
// what the scripted forward uses); public_name gives the dotted name back, the one users
// know (--model.freeze, --init-from, export). A parameter the module holds with
// requires_grad False stays frozen; a floating parameter must be float32. Its forward's
// signature says how it is called:
//   forward(x) -> logits [N, classes]                    classes, fixed-length samples
//   forward(x, lengths) -> logits [N, classes]            classes, sequences [C, T]
//   forward(x, lengths) -> (logits [N, T, C], out_lengths) CTC (C = tokens + 1, blank last)
// lengths: int64 [N] on the CPU, only for sequences (the last sample axis is time). Checked
// before step 1 on probe batches in eval mode (2 samples, no grad) and in train mode (3
// samples: outputs that depend on the parameters; buffers and the random state restored);
// every batch's output shape and out_lengths are checked again as it runs. The module's
// errors (its own raise, an operator this LibTorch lacks) are one line naming the model.
#include <ATen/CPUGeneratorImpl.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <map>

#include "core/base/error.hpp"
#include "core/model/registry.hpp"
#include "io/util/file_util.hpp"

namespace lockstep {
namespace {

std::string flat_name(std::string name) {
  for (size_t i = 0; (i = name.find('.', i)) != std::string::npos; i += 2) name.replace(i, 1, "__");
  return name;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// One line of what the TorchScript interpreter or compiler threw: the message under the
// interpreter's traceback ("RuntimeError: lengths 16 but ..."), else the first non-empty line.
std::string script_error_line(const std::exception& e) {
  const auto* c10 = dynamic_cast<const c10::Error*>(&e);
  const std::string text = c10 ? c10->what_without_backtrace() : e.what();
  std::string first, raised;
  size_t at = 0;
  bool traceback = false;
  while (at < text.size()) {
    const size_t nl = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, nl - at);
    at = nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (first.empty()) first = line;
    if (line.rfind("Traceback of TorchScript", 0) == 0) traceback = true;
    // "RuntimeError: MSG", "builtins.ValueError: MSG": an exception's class, unindented.
    const std::string head = line.substr(0, line.find(": "));
    const bool named = head.size() < line.size() && head.find(' ') == std::string::npos && line[0] != ' ' &&
                       (ends_with(head, "Error") || ends_with(head, "Exception"));
    if (traceback && raised.empty() && named) raised = line;
  }
  std::string out = raised.empty() ? first : raised;
  if (out.size() > 300) out = out.substr(0, 297) + "...";
  return out;
}

// How the scripted forward is called, read from its signature: (x) or (x, lengths), and
// a tensor (class logits) or a (logits [N, T, C], out_lengths [N]) tuple (CTC).
struct ScriptSignature {
  bool takes_lengths = false, returns_tuple = false;
};

class ScriptNet final : public Net {
 public:
  ScriptNet(torch::jit::Module module, ScriptSignature sig, std::string what)
      : module_(std::move(module)), sig_(sig), what_(std::move(what)) {
    for (const auto& p : module_.named_parameters(/*recurse=*/true)) {
      if (p.value.is_floating_point() && p.value.scalar_type() != torch::kFloat)
        throw UsageError(what_ + ": parameter " + p.name + " is " + std::string(c10::toString(p.value.scalar_type())) +
                         "; lockstep trains float32 parameters (call .float() on the module before scripting it)");
      register_parameter(flat_name(p.name), p.value, p.value.requires_grad());  // the module's own freezing kept
      public_[flat_name(p.name)] = p.name;
    }
    for (const auto& b : module_.named_buffers(/*recurse=*/true)) {
      register_buffer(flat_name(b.name), b.value);
      public_[flat_name(b.name)] = b.name;
    }
  }
  std::string public_name(const std::string& key) const override {
    const auto it = public_.find(key);
    return it == public_.end() ? key : it->second;
  }
  torch::Tensor forward(torch::Tensor x) override {
    if (!sig_.takes_lengths) return class_logits(call({x}).toTensor(), x);
    const torch::Tensor full = torch::full({x.size(0)}, x.size(-1), torch::kLong);
    torch::Tensor out_lengths;
    return sig_.returns_tuple ? forward_sequence(x, full, &out_lengths) : forward_ragged(x, full);
  }
  bool sequence_output() const override { return sig_.returns_tuple; }
  bool takes_ragged() const override { return sig_.takes_lengths && !sig_.returns_tuple; }
  // LENGTHS stay CPU int64, as lockstep's own models get them (pack_padded_sequence wants that).
  torch::Tensor forward_ragged(torch::Tensor x, const torch::Tensor& lengths) override {
    return class_logits(call({x, lengths}).toTensor(), x);
  }
  torch::Tensor forward_sequence(torch::Tensor x, const torch::Tensor& lengths, torch::Tensor* out_lengths) override {
    const c10::IValue out = call({x, lengths});
    if (!out.isTuple() || out.toTupleRef().elements().size() != 2 || !out.toTupleRef().elements()[0].isTensor() ||
        !out.toTupleRef().elements()[1].isTensor())
      throw UsageError(what_ + ": forward must return (logits [N, T, C], out_lengths [N]), two tensors");
    const auto& items = out.toTupleRef().elements();
    const torch::Tensor logits = items[0].toTensor();
    if (logits.dim() != 3 || logits.size(0) != x.size(0) || !logits.is_floating_point())
      throw UsageError(what_ + ": forward returns logits " + c10::str(logits.sizes(), " ", logits.scalar_type()) +
                       " for a batch of " + std::to_string(x.size(0)) + ", expected floating [N, T, C] with N = " +
                       std::to_string(x.size(0)));
    *out_lengths = items[1].toTensor().to(torch::kCPU, torch::kLong);
    // Every batch: a frame count of 0 scored nothing (CTC counts such a sample 0), one past T
    // failed inside the loss with LibTorch's words.
    if (out_lengths->dim() != 1 || out_lengths->size(0) != x.size(0) || out_lengths->min().item<int64_t>() < 1 ||
        out_lengths->max().item<int64_t>() > logits.size(1))
      throw UsageError(what_ + ": forward returns out_lengths " + c10::str(out_lengths->sizes()) + " with values " +
                       (out_lengths->numel() ? c10::str(out_lengths->min().item<int64_t>(), "..",
                                                        out_lengths->max().item<int64_t>())
                                             : std::string("none")) +
                       " for a batch of " + std::to_string(x.size(0)) + ": expected one frame count in [1, " +
                       std::to_string(logits.size(1)) + "] per sample");
    return logits;
  }
  void train(bool on = true) override {
    Net::train(on);
    module_.train(on);
  }
  void to(torch::Device device, bool non_blocking = false) override {
    module_.to(device, non_blocking);  // moves the shared tensors in place
  }

 private:
  // The module's forward; its own errors (a raise, an operator failing inside the
  // interpreter, which rethrows them as std::runtime_error) as one line naming the model.
  // LibTorch's own errors (c10::Error: out of memory among them) pass as they are.
  c10::IValue call(std::vector<c10::IValue> inputs) {
    try {
      return module_.forward(std::move(inputs));
    } catch (const c10::Error&) {
      throw;
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error(what_ + ": forward failed: " + script_error_line(e));
    }
  }
  // Class logits [N, classes] for a batch X of N: the shape every batch (the probe checks the
  // class count against the data).
  torch::Tensor class_logits(const torch::Tensor& out, const torch::Tensor& x) const {
    if (out.dim() != 2 || out.size(0) != x.size(0) || !out.is_floating_point())
      throw UsageError(what_ + ": forward returns " + c10::str(out.sizes(), " ", out.scalar_type()) + " for a batch of " +
                       std::to_string(x.size(0)) + ", expected floating logits [" + std::to_string(x.size(0)) +
                       ", classes]");
    return out;
  }

  torch::jit::Module module_;
  ScriptSignature sig_;
  std::string what_;
  std::map<std::string, std::string> public_;  // flat key -> the module's dotted name
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

// A probe's answer (a batch of N) checked against what DATA needs; throws a one-line
// UsageError. The forward wrappers checked the batch size, dims and dtype already.
void check_outputs(const std::string& what, const io::DatasetSpec& spec, const ScriptSignature& sig,
                   const torch::Tensor& out, int64_t n) {
  if (spec.sequence_outputs()) {
    const int64_t classes = static_cast<int64_t>(spec.tokens.size()) + 1;
    if (!sig.takes_lengths || !sig.returns_tuple)
      throw UsageError(what + ": dataset '" + spec.name + "' has sequence targets (CTC): forward must take (x, lengths) "
                       "and return (logits [N, T, " + std::to_string(classes) + "], out_lengths [N])");
    if (out.size(2) != classes)
      throw UsageError(what + ": forward returns logits of shape " + c10::str(out.sizes()) + " for a batch of " +
                       std::to_string(n) + ", expected [" + std::to_string(n) + ", T, " + std::to_string(classes) +
                       "] (tokens + blank of dataset '" + spec.name + "')");
    return;
  }
  if (sig.returns_tuple)
    throw UsageError(what + ": forward returns a tuple (a CTC model), but dataset '" + spec.name + "' has class labels");
  if (out.size(1) != spec.num_classes)
    throw UsageError(what + ": forward returns shape " + c10::str(out.sizes()) + " for a batch of " + std::to_string(n) +
                     ", expected [" + std::to_string(n) + ", " + std::to_string(spec.num_classes) +
                     "] (classes of dataset '" + spec.name + "')");
}

// Runs NET on a batch of zeros as training would: in eval mode, 2 samples, no grad; in train
// mode, 3 samples (a model fixed to 2 is caught) with grad, whose logits must depend on the
// parameters when any is trainable. The train-mode run leaves no trace: the buffers it moves
// (BatchNorm's running statistics) and the random state (dropout) are restored.
void probe(Net& net, const io::DatasetSpec& spec, const ScriptSignature& sig, const std::string& what, bool training) {
  const int64_t n = training ? 3 : 2;
  std::vector<int64_t> shape{n};
  shape.insert(shape.end(), spec.sample_shape.begin(), spec.sample_shape.end());
  const std::string batch = "a batch of shape " + c10::str(c10::IntArrayRef(shape)) +
                            (sig.takes_lengths ? " with lengths" : "") + " in " + (training ? "train" : "eval") + " mode";
  std::vector<torch::Tensor> buffers;
  for (const auto& b : net.buffers()) buffers.push_back(b.clone());
  auto gen = at::detail::getDefaultCPUGenerator();
  const at::Tensor random_state = gen.get_state();
  torch::Tensor out;
  try {
    const torch::AutoGradMode grad(training);
    net.train(training);
    out = net.forward(torch::zeros(shape));  // every sample full length: the signature's own call (ScriptNet::forward)
  } catch (const Error& e) {  // the wrappers' words, naming the model already
    throw UsageError(std::string(e.what()) + " (on " + batch + ")");
  } catch (const std::exception& e) {
    throw UsageError(what + ": forward fails on " + batch + ": " + script_error_line(e));
  }
  {
    torch::NoGradGuard no_grad;
    const std::vector<torch::Tensor> now = net.buffers();
    for (size_t i = 0; i < now.size(); ++i) now[i].copy_(buffers[i]);
  }
  gen.set_state(random_state);
  net.train();
  check_outputs(what, spec, sig, out, n);
  bool trainable = false;
  for (const auto& p : net.parameters()) trainable = trainable || p.requires_grad();
  if (training && trainable && !out.requires_grad())
    throw UsageError(what + ": in train mode forward returns logits that do not depend on its parameters (detached, "
                     "or computed without them): nothing would train");
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
  ScriptSignature sig;
  try {  // a file of another torch: its code may name operators this LibTorch lacks
    module = torch::jit::load(path);
    sig = signature_of(module, what);
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    throw UsageError(what + ": cannot load a TorchScript module (" + script_error_line(e) + ")");
  }
  if (sig.takes_lengths && spec.sample_shape.size() > 2)
    throw UsageError(what + ": forward takes (x, lengths), which lockstep gives series ([time] or [channels, time]) only; dataset '" +
                     spec.name + "' holds samples of shape " + c10::str(c10::IntArrayRef(spec.sample_shape)) + ": script forward(x)");
  auto net = std::make_shared<ScriptNet>(std::move(module), sig, what);
  if (net->parameters().empty()) throw UsageError(what + ": the module has no parameters to train");
  probe(*net, spec, sig, what, /*training=*/false);
  probe(*net, spec, sig, what, /*training=*/true);
  return net;
}

}  // namespace lockstep
