// For a test's scope, the oneDNN setting lockstep trains a model with on the CPU
// (core/model/onednn_guard.hpp: off under bf16 autocast for 3-d convolutions), so that tests of
// the models under bf16 test what lockstep runs, not oneDNN's wrong bf16 conv3d gradients.
#pragma once

#include <ATen/Context.h>

#include "core/model/onednn_guard.hpp"

namespace lockstep::testing {

class OnednnAsTrained {
 public:
  OnednnAsTrained(const torch::nn::Module& model, Amp amp) : was_(at::globalContext().userEnabledMkldnn()) {
    if (!onednn_obstacle(model, torch::kCPU, amp).empty()) at::globalContext().setUserEnabledMkldnn(false);
  }
  ~OnednnAsTrained() { at::globalContext().setUserEnabledMkldnn(was_); }
  OnednnAsTrained(const OnednnAsTrained&) = delete;
  OnednnAsTrained& operator=(const OnednnAsTrained&) = delete;

 private:
  bool was_;
};

}  // namespace lockstep::testing
