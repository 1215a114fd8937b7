// device_memory: peak GPU memory of this rank (torch's caching allocator), for the
// per-epoch log. 0 on CPU or in a build without CUDA headers.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>

#include "core/base/error.hpp"

namespace lockstep {

class MpiRuntime;

int64_t peak_device_bytes(torch::Device device);  // since the last reset
void reset_peak_device_bytes(torch::Device device);
// Collective (GPU runs only; nothing on CPU): every rank's peak since the last call, one
// line by rank 0, and the peaks reset.
void report_device_memory(const MpiRuntime& mpi, torch::Device device);

// The one line an out-of-memory error ends this rank with: the step, device, batch per
// rank and peak memory, the allocator's own first sentences (TORCH_MESSAGE), and what to
// change — of the levers lockstep has, those not already on.
struct OomContext {
  int64_t step = 0, batch = 0, grad_accum = 1;
  bool amp = false, checkpointing = false, model_checkpoints = false;  // the model can recompute activations
};
std::string out_of_memory_message(const std::string& torch_message, torch::Device device, const OomContext& c);
// STEP(), with the allocator's out-of-memory error turned into that one line (an Error).
template <typename F>
auto out_of_memory_named(F&& step, torch::Device device, const OomContext& c) -> decltype(step()) {
  try {
    return step();
  } catch (const c10::OutOfMemoryError& e) {
    throw Error(out_of_memory_message(e.what_without_backtrace(), device, c));
  }
}

}  // namespace lockstep
