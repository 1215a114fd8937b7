// model_init: see model_init.hpp.
#include "core/train/model_init.hpp"

#include <fmt/format.h>

#include <unordered_set>

#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/model/sync_bn.hpp"
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
    // A prefix that excludes nothing loaded the head it meant to drop (fc. on a model whose
    // head is fc1./fc2.), silently; --model.freeze refuses the same mistake.
    if (!r.unused_exclude.empty()) {
      std::string names;
      for (size_t i = 0; i < src.tensors.size() && i < 8; ++i) names += (i ? ", " : "") + src.tensors[i].first;
      throw UsageError(fmt::format("--model.init-exclude {}: no tensor of {} starts with it, so nothing was left out "
                                   "(its names: {}{})",
                                   r.unused_exclude.front(), cfg.init_from, names, src.tensors.size() > 8 ? ", ..." : ""));
    }
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
    throw UsageError(freeze.empty() ? std::string("the model has no parameter to train (each one's requires_grad is "
                                                  "False)")
                                    : "--model.freeze " + freeze + " leaves no parameter to train");
  return trainable;
}

int use_sync_bn(const Config& cfg, Net& model, Communicator* comm) {
  if (!cfg.sync_bn) return 0;
  const int synced = set_sync_bn(model, comm);
  int running_means = 0;  // every BatchNorm layer's, lockstep's and a TorchScript module's own
  for (const auto& b : model.named_buffers()) {
    const std::string& name = b.key();
    if (name.size() >= 12 && name.compare(name.size() - 12, 12, "running_mean") == 0) ++running_means;
  }
  if (running_means > synced)
    throw UsageError("--model.sync-bn: model '" + cfg.model + "' has " + std::to_string(running_means - synced) +
                     " BatchNorm layer(s) lockstep cannot synchronise (a TorchScript module's own); "
                     "drop --model.sync-bn or use a built-in model");
  return synced;
}

OptimizerOptions optimizer_options(const Config& cfg, int world) {
  return OptimizerOptions{cfg.optimizer,  scaled_lr(cfg.lr, cfg.lr_scaling, world), cfg.momentum, cfg.nesterov,
                          cfg.weight_decay, cfg.beta1, cfg.beta2, 1e-8};
}

}  // namespace lockstep
