// torchscript: --model torchscript:PATH, a module scripted in Python, trained as a Net.
// Its parameters and buffers are registered on the Net under their dotted names with '.'
// replaced by '__' (the same tensors, so the optimizer, the reducer and checkpoints see
// what the scripted forward uses).
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

class ScriptNet final : public Net {
 public:
  explicit ScriptNet(torch::jit::Module module) : module_(std::move(module)) {
    for (const auto& p : module_.named_parameters(/*recurse=*/true)) register_parameter(flat_name(p.name), p.value);
    for (const auto& b : module_.named_buffers(/*recurse=*/true))
      register_buffer(flat_name(b.name), b.value);
  }
  torch::Tensor forward(torch::Tensor x) override { return module_.forward({x}).toTensor(); }
  void train(bool on = true) override {
    Net::train(on);
    module_.train(on);
  }
  void to(torch::Device device, bool non_blocking = false) override {
    module_.to(device, non_blocking);  // moves the shared tensors in place
  }

 private:
  torch::jit::Module module_;
};

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
  auto net = std::make_shared<ScriptNet>(std::move(module));
  if (net->parameters().empty()) throw UsageError(what + ": the module has no parameters to train");
  std::vector<int64_t> probe_shape{2};
  probe_shape.insert(probe_shape.end(), spec.sample_shape.begin(), spec.sample_shape.end());
  torch::Tensor out;
  try {
    torch::NoGradGuard no_grad;
    net->eval();
    out = net->forward(torch::zeros(probe_shape));
    net->train();
  } catch (const c10::Error& e) {
    throw UsageError(what + ": forward fails on a batch of shape " + c10::str(probe_shape) + " (" +
                     std::string(e.what_without_backtrace()).substr(0, 300) + ")");
  }
  if (out.dim() != 2 || out.size(0) != 2 || out.size(1) != spec.num_classes)
    throw UsageError(what + ": forward returns shape " + c10::str(out.sizes()) + " for a batch of 2, expected [2, " +
                     std::to_string(spec.num_classes) + "] (classes of dataset '" + spec.name + "')");
  return net;
}

}  // namespace lockstep
