// For a test's scope, the oneDNN setting lockstep trains a model with on the CPU
// (core/model/onednn_guard.hpp: off under bf16 autocast for 3-d convolutions), so that tests of
// the models under bf16 test what lockstep runs, not oneDNN's wrong bf16 conv3d gradients.
#pragma once

#include <ATen/Context.h>

#include "core/model/onednn_guard.hpp"

namespace lockstep::testing {

class OnednnAsTrained {
 public:
  OnednnAsTrained(const torch::nn::Module& model, Amp amp)
      : was_(at::globalContext().userEnabledMkldnn()),
        off_(!keep_onednn_off_where_wrong(model, torch::kCPU, amp).empty()) {}
  ~OnednnAsTrained() { at::globalContext().setUserEnabledMkldnn(was_); }
  OnednnAsTrained(const OnednnAsTrained&) = delete;
  OnednnAsTrained& operator=(const OnednnAsTrained&) = delete;

  // Whether the guard turned oneDNN off for the model (its 3-d convolutions then run ATen's).
  bool off() const { return off_; }

 private:
  bool was_, off_;
};

}  // namespace lockstep::testing
