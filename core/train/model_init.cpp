// model_init: see model_init.hpp.
#include "core/train/model_init.hpp"

#include <fmt/format.h>

#include <unordered_set>

#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/model/weights.hpp"
#include "core/train/weight_source.hpp"

namespace lockstep {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= text.size() && !text.empty()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    if (comma > at) out.push_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

void init_weights(const Config& cfg, Net& model) {
  if (!cfg.init_from.empty()) {
    // Every rank reads the file (the weights are broadcast from rank 0 right after anyway):
    // a file one rank cannot read fails alike everywhere.
    const WeightSource src = read_weights(cfg.init_from, cfg.model);
    const LoadReport r = load_named(model, src.tensors, split_list(cfg.init_exclude));
    if (r.loaded.empty())
      throw UsageError(fmt::format("--model.init-from {}: no tensor of it fits model '{}' ({} of its names are unknown "
                                   "here, {} have another shape)",
                                   cfg.init_from, cfg.model, r.unexpected.size(), r.mismatched.size()));
    log::info0(fmt::format("init from {} ({}{}): weights only, optimizer and step start afresh\n{}", cfg.init_from,
                           src.model.empty() ? "foreign safetensors" : "model " + src.model,
                           src.step >= 0 ? fmt::format(", step {}", src.step) : "", r.table()));
  }
  if (!cfg.freeze.empty())
    log::info0(fmt::format("frozen: {} parameter tensor(s) under {} (--model.freeze)",
                           freeze(model, split_list(cfg.freeze)), cfg.freeze));
}

std::vector<torch::Tensor> trainable_params(Net& model, const std::string& freeze) {
  std::vector<torch::Tensor> trainable;
  std::unordered_set<const void*> seen;  // a tensor registered under two names is trained once
  for (const auto& p : model.parameters())
    if (p.requires_grad() && seen.insert(p.unsafeGetTensorImpl()).second) trainable.push_back(p);
  if (trainable.empty())
    throw UsageError("--model.freeze " + freeze + " leaves no parameter to train");
  return trainable;
}

}  // namespace lockstep
