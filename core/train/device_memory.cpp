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

std::string out_of_memory_message(const std::string& torch_message, torch::Device device, const OomContext& c) {
  // The allocator's message runs to a paragraph; its first two sentences say what failed.
  std::string what = torch_message.substr(0, torch_message.find('\n'));
  size_t cut = what.find(". ");
  if (cut != std::string::npos) cut = what.find(". ", cut + 2);
  if (cut != std::string::npos) what.resize(cut + 1);
  const int64_t peak = peak_device_bytes(device);
  std::vector<std::string> levers{"lower --batch-size" +
                                  std::string(c.grad_accum > 1 ? "" : " (--grad-accum N keeps the global batch)")};
  if (!c.amp) levers.push_back("--amp bf16");
  if (c.model_checkpoints && !c.checkpointing) levers.push_back("--model.checkpoint-activations");
  std::string change;
  for (size_t i = 0; i < levers.size(); ++i) change += (i == 0 ? "" : i + 1 == levers.size() ? " or " : ", ") + levers[i];
  return fmt::format("out of memory at step {} on {} with a batch of {} per rank{}: {} To fit: {}", c.step,
                     device.str(), c.batch,
                     peak > 0 ? fmt::format(" (peak {:.2f} GiB allocated)", static_cast<double>(peak) / (1 << 30)) : "",
                     what, change);
}

}  // namespace lockstep
