// flop_count: see flop_count.hpp.
#include "core/model/flop_count.hpp"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/generated/Functions.h>
#include <torch/torch.h>

#include <cctype>
#include <unordered_set>
#include <vector>

namespace lockstep {
namespace {

using torch::autograd::Node;

double numel(c10::SymIntArrayRef shape) {
  double n = 1;
  for (const auto& d : shape) n *= static_cast<double>(d.expect_int());
  return n;
}

// The shape of the tensor NODE's I-th edge received in the forward pass (empty: no edge).
std::vector<int64_t> edge_shape(const Node& node, size_t i) {
  if (i >= node.num_outputs()) return {};
  const auto& e = node.next_edge(i);
  if (!e.is_valid()) return {};
  std::vector<int64_t> out;
  for (const auto& d : e.function->input_metadata(e.input_nr).shape_as_dim_vector()) out.push_back(d.expect_int());
  return out;
}

double product(const std::vector<int64_t>& s, size_t from) {
  double n = 1;
  for (size_t k = from; k < s.size(); ++k) n *= static_cast<double>(s[k]);
  return n;
}

// FLOPs of one node of the graph (0 for what is not counted).
double node_flops(const Node& node) {
  const std::string name = node.name();
  if (node.num_inputs() == 0) return 0;
  const double out = numel(node.input_metadata(0).shape_as_dim_vector());
  if (name == "ConvolutionBackward0") {  // edges: input, weight, bias
    const std::vector<int64_t> w = edge_shape(node, 1);
    if (w.size() < 3 || w[0] == 0) return 0;
    const auto* conv = dynamic_cast<const torch::autograd::generated::ConvolutionBackward0*>(&node);
    if (conv && conv->transposed) {  // weight [C_in, C_out/g, k...]: each input element fans out
      const std::vector<int64_t> in = edge_shape(node, 0);
      return in.empty() ? 0.0 : 2.0 * product(in, 0) * product(w, 1);
    }
    return 2.0 * out * product(w, 1);  // weight [C_out, C_in/g, k...]
  }
  // The reduced dimension K of out = A @ B: A's last dimension, or B's second to last when A
  // left no edge (a constant that does not require grad). Edges: [self,] A, B.
  const auto inner = [&](size_t a) {
    const std::vector<int64_t> s = edge_shape(node, a), t = edge_shape(node, a + 1);
    if (!s.empty()) return static_cast<double>(s.back());
    return t.size() >= 2 ? static_cast<double>(t[t.size() - 2]) : 0.0;
  };
  if (name == "MmBackward0" || name == "BmmBackward0") return 2.0 * out * inner(0);
  if (name == "AddmmBackward0" || name == "BaddbmmBackward0") return 2.0 * out * inner(1);
  return 0;
}

// Nodes whose work the count cannot see: recurrent networks and attention run as one kernel.
bool hides_work(const std::string& name) {
  return name.find("Rnn") != std::string::npos || name.find("Lstm") != std::string::npos ||
         name.find("Gru") != std::string::npos || name.find("Attention") != std::string::npos ||
         name.find("ScaledDotProduct") != std::string::npos;
}

}  // namespace

FlopCount count_forward_flops(Net& model, const io::DatasetSpec& spec, torch::Device device) {
  FlopCount count;
  const bool training = model.is_training();
  std::vector<std::pair<torch::Tensor, bool>> grads;
  for (auto& p : model.parameters()) grads.emplace_back(p, p.requires_grad());
  try {
    model.eval();
    for (auto& [p, had] : grads) p.requires_grad_(true);
    torch::AutoGradMode grad_on(true);
    std::vector<int64_t> dims{1};
    dims.insert(dims.end(), spec.sample_shape.begin(), spec.sample_shape.end());
    const torch::Tensor x = torch::zeros(dims, torch::TensorOptions().device(device)).requires_grad_(true);
    torch::Tensor y;
    const torch::Tensor lengths = torch::full({1}, dims.back(), torch::kLong);
    if (spec.sequence_outputs()) {
      torch::Tensor out_lengths;
      y = model.forward_sequence(x, lengths, &out_lengths);
    } else {
      y = class_logits(model, x, spec.ragged ? lengths : torch::Tensor());
    }
    std::vector<Node*> todo{y.grad_fn().get()};
    std::unordered_set<Node*> seen;
    while (!todo.empty()) {
      Node* node = todo.back();
      todo.pop_back();
      if (!node || !seen.insert(node).second) continue;
      const double f = node_flops(*node);
      if (f > 0) count.forward_per_sample += f, ++count.layers;
      if (count.unseen.empty() && hides_work(node->name())) count.unseen = node->name();
      for (const auto& e : node->next_edges())
        if (e.is_valid()) todo.push_back(e.function.get());
    }
  } catch (const std::exception&) {
    count = FlopCount{};
  }
  for (auto& [p, had] : grads) p.requires_grad_(had);
  model.train(training);
  return count;
}

std::optional<double> gpu_peak_flops(const std::string& name, bool half) {
  // Dense tensor-core peaks from the data sheets, TFLOP/s: (bf16/fp16, TF32). A part name
  // matches as a whole word of NAME ("L4" is not "L40"), the more specific first; the SXM
  // figure where the name does not say PCIe or NVL.
  struct Peak {
    const char* part;
    double half, tf32;
  };
  static constexpr Peak kPeaks[] = {
      {"H100 PCIe", 756.0, 378.0}, {"H100 NVL", 835.0, 417.5}, {"H100", 989.4, 494.7}, {"H200", 989.4, 494.7},
      {"GH200", 989.4, 494.7},     {"GB200", 2500.0, 1250.0},  {"B200", 2250.0, 1100.0}, {"A100", 312.0, 156.0},
      {"L40S", 362.1, 183.0},      {"L40", 181.0, 90.5},       {"L4", 121.0, 60.0},      {"A10", 125.0, 62.5},
      {"A30", 165.0, 82.0},        {"V100", 125.0, 15.7}};
  const auto word = [&](const std::string& part) {
    for (size_t at = name.find(part); at != std::string::npos; at = name.find(part, at + 1)) {
      const bool before = at == 0 || !std::isalnum(static_cast<unsigned char>(name[at - 1]));
      const size_t end = at + part.size();
      const bool after = end == name.size() || !std::isalnum(static_cast<unsigned char>(name[end]));
      if (before && after) return true;
    }
    return false;
  };
  for (const auto& p : kPeaks)
    if (word(p.part)) return 1e12 * (half ? p.half : p.tf32);
  return std::nullopt;
}

}  // namespace lockstep
