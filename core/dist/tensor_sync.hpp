// tensor_sync: whole tensors made identical across ranks — the initial parameters and
// buffers (broadcast from rank 0) and BatchNorm running statistics (broadcast or average).
// Each call packs its tensors into one flat float buffer: one collective however many
// tensors. Collective.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "core/dist/communicator.hpp"

namespace lockstep {

// Broadcasts every tensor in TENSORS from rank 0 (initial parameters and buffers).
// Collective.
void broadcast_tensors(const std::vector<at::Tensor>& tensors, Communicator& comm);
// Averages floating-point TENSORS across ranks in place (BatchNorm running statistics).
// Collective.
void average_tensors(const std::vector<at::Tensor>& tensors, Communicator& comm);

}  // namespace lockstep
