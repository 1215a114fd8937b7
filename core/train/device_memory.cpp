// device_memory: see device_memory.hpp.
#include "core/train/device_memory.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace lockstep {

int64_t peak_device_bytes(torch::Device device) {
#ifdef LOCKSTEP_HAVE_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    return stats.allocated_bytes[0].peak;  // 0: the aggregate over pool types
  }
#endif
  (void)device;
  return 0;
}

void reset_peak_device_bytes(torch::Device device) {
#ifdef LOCKSTEP_HAVE_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
#endif
  (void)device;
}

}  // namespace lockstep
