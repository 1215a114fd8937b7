// device_memory: see device_memory.hpp.
#include "core/train/device_memory.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "core/base/log.hpp"
#include "core/dist/mpi_runtime.hpp"

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

void report_device_memory(const MpiRuntime& mpi, torch::Device device) {
  if (!device.is_cuda()) return;  // the same on every rank (the backend choice)
  std::vector<double> peak(static_cast<size_t>(mpi.size()), 0.0);
  peak[static_cast<size_t>(mpi.rank())] = static_cast<double>(peak_device_bytes(device));
  reset_peak_device_bytes(device);
  mpi.allreduce_sum(peak.data(), static_cast<int>(peak.size()));
  std::string line = "peak GPU memory per rank:";
  for (size_t i = 0; i < peak.size(); ++i) line += fmt::format(" r{} {:.2f} GiB", i, peak[i] / (1 << 30));
  log::info0(line);
}

}  // namespace lockstep
