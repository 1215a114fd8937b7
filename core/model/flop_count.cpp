// flop_count: see flop_count.hpp.
#include "core/model/flop_count.hpp"

#include <torch/csrc/autograd/function.h>
#include <torch/torch.h>

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

// FLOPs of one node of the graph (0 for what is not counted).
double node_flops(const Node& node) {
  const std::string name = node.name();
  if (node.num_inputs() == 0) return 0;
  const double out = numel(node.input_metadata(0).shape_as_dim_vector());
  if (name == "ConvolutionBackward0") {  // edges: input, weight, bias
    const std::vector<int64_t> w = edge_shape(node, 1);
    if (w.size() < 3 || w[0] == 0) return 0;
    double per_output = 1;  // input channels per group x kernel elements
    for (size_t k = 1; k < w.size(); ++k) per_output *= static_cast<double>(w[k]);
    return 2.0 * out * per_output;
  }
  // The reduced dimension K of out = A @ B: A's last dimension (edges: [self,] A, B).
  const auto inner = [&](size_t a) {
    const std::vector<int64_t> s = edge_shape(node, a);
    return s.empty() ? 0.0 : static_cast<double>(s.back());
  };
  if (name == "MmBackward0" || name == "BmmBackward0") return 2.0 * out * inner(0);
  if (name == "AddmmBackward0" || name == "BaddbmmBackward0") return 2.0 * out * inner(1);
  return 0;
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
  // Dense tensor-core peaks from the data sheets, TFLOP/s: (bf16/fp16, TF32). The SXM and
  // PCIe parts differ; a name that does not say which takes the SXM figure.
  struct Peak {
    const char* part;
    double half, tf32;
  };
  static constexpr Peak kPeaks[] = {{"H200", 989.4, 494.7},   {"H100 PCIe", 756.0, 378.0}, {"H100", 989.4, 494.7},
                                    {"GH200", 989.4, 494.7},  {"B200", 2250.0, 1100.0},    {"A100", 312.0, 156.0},
                                    {"L40S", 362.1, 183.0},   {"L4", 121.0, 60.0},         {"A10", 125.0, 62.5},
                                    {"A30", 165.0, 82.0},     {"V100", 125.0, 15.7}};
  for (const auto& p : kPeaks)
    if (name.find(p.part) != std::string::npos) return 1e12 * (half ? p.half : p.tf32);
  return std::nullopt;
}

}  // namespace lockstep
