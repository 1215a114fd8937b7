// model_init: a training model's weights before step 1 — --model.init-from (a checkpoint's
// or safetensors file's weights, partially, with a table) and --model.freeze — and the
// parameters the optimizer then trains. Session runs them; `lockstep doctor` too, so that a
// file train cannot start from, or a freeze that leaves nothing, is a doctor problem.
#pragma once

#include <string>
#include <vector>

#include <torch/types.h>

#include "core/config/config.hpp"
#include "core/model/registry.hpp"

namespace lockstep {

// "a,b,,c" -> {"a", "b", "c"}.
std::vector<std::string> split_list(const std::string& text);

// --model.init-from and --model.freeze, on MODEL as built (before the broadcast). Throws
// UsageError naming the file when none of its tensors fits.
void init_weights(const Config& cfg, Net& model);

// MODEL's parameters that train (a tensor registered under two names once). Throws UsageError
// when --model.freeze FREEZE left none.
std::vector<torch::Tensor> trainable_params(Net& model, const std::string& freeze);

}  // namespace lockstep
