// device_memory: peak GPU memory of this rank (torch's caching allocator), for the
// per-epoch log. 0 on CPU or in a build without CUDA headers.
#pragma once

#include <torch/types.h>

#include <cstdint>

namespace lockstep {

class MpiRuntime;

int64_t peak_device_bytes(torch::Device device);  // since the last reset
void reset_peak_device_bytes(torch::Device device);
// Collective (GPU runs only; nothing on CPU): every rank's peak since the last call, one
// line by rank 0, and the peaks reset.
void report_device_memory(const MpiRuntime& mpi, torch::Device device);

}  // namespace lockstep
