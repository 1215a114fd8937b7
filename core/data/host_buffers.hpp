// host_buffers: the host memory a device copy reads out of, and its fences, for a device.
//   a GPU: pinned memory (torch's caching host allocator) and CUDA events recorded on the
//          stream current at record() — so a non_blocking copy out of it is a DMA that the
//          host does not wait for;
//   the CPU: plain memory and fences that are done at once (a copy on the CPU is complete when
//          it returns) — the same code path, for the tests.
// Used by the staging rings (staging_ring.hpp) and the training loader's batches
// (io/loader/batch_pool.hpp), which is how a batch goes to the GPU without a host copy.
#pragma once

#include <c10/core/Device.h>

#include "core/base/fence.hpp"

namespace lockstep {

HostBuffers host_buffers(c10::Device device);

}  // namespace lockstep
