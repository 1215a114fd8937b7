// model_init: a training model's weights before step 1 — --model.init-from (a checkpoint's
// or safetensors file's weights, partially, with a table) and --model.freeze —, its
// synchronised BatchNorm, the parameters the optimizer then trains and the optimizer's
// options. Session runs them; `lockstep doctor` too, so that a file train cannot start from,
// a freeze that leaves nothing or a --model.sync-bn it refuses is a doctor problem, and a
// checkpoint doctor loads meets the optimizer train would build.
#pragma once

#include <string>
#include <vector>

#include <torch/types.h>

#include "core/config/config.hpp"
#include "core/model/registry.hpp"
#include "core/optim/optimizer.hpp"

namespace lockstep {

class Communicator;

// "a,b,,c" -> {"a", "b", "c"}.
std::vector<std::string> split_list(const std::string& text);

// --model.init-from and --model.freeze, on MODEL as built (before the broadcast). Throws
// UsageError naming the file when none of its tensors fits.
void init_weights(const Config& cfg, Net& model);

// MODEL's parameters that train (a tensor registered under two names once). Throws UsageError
// when --model.freeze FREEZE left none.
std::vector<torch::Tensor> trainable_params(Net& model, const std::string& freeze);

// --model.sync-bn: MODEL's BatchNorm layers synchronised through COMM (nullptr: counted, left
// local, as doctor does). Returns how many; 0 without --model.sync-bn. Throws UsageError when
// the model has BatchNorm layers lockstep cannot synchronise (a TorchScript module's own):
// --model.sync-bn must not claim what it does not do.
int use_sync_bn(const Config& cfg, Net& model, Communicator* comm);

// The optimizer's options for a run of WORLD ranks (--train.lr scaled by --train.lr-scaling).
OptimizerOptions optimizer_options(const Config& cfg, int world);

}  // namespace lockstep
