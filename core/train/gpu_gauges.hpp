// gpu_gauges: this rank's GPU as NVML reads it at a log row — utilisation (the share of the
// last sample period in which a kernel ran), memory in use (every process's), board power.
//
// NVML is the driver's library (libnvidia-ml.so.1): it is loaded at run time, so one build
// runs on GPU nodes, CPU nodes and CI alike; where it is absent, or the device is not found
// or does not report a gauge, that gauge is "not measured" (an unset value, "n/a" in the log),
// never an error. The GPU is found by the PCI bus id CUDA gives for the rank's device, so
// CUDA_VISIBLE_DEVICES renumbering does not matter. Reads are a few microseconds each and
// make no CUDA call: nothing waits for the device.
#pragma once

#include <torch/types.h>

#include <memory>
#include <optional>
#include <string>

namespace lockstep {


struct GpuReading {
  std::optional<double> util_pct, mem_gib, power_w;
};

class GpuGauges {
 public:
  explicit GpuGauges(torch::Device device);
  ~GpuGauges();
  GpuGauges(const GpuGauges&) = delete;
  GpuGauges& operator=(const GpuGauges&) = delete;

  bool available() const { return nvml_ != nullptr; }
  const std::string& why_not() const { return why_not_; }  // "" when available
  GpuReading read() const;

 private:
  struct Nvml;
  std::unique_ptr<Nvml> nvml_;
  std::string why_not_;
};

}  // namespace lockstep
