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

#include "core/config/config.hpp"
#include "core/model/registry.hpp"

namespace lockstep {

// What the log rows read of a rank's GPU: the device, and for MFU the model FLOPs of one
// optimizer step of one rank and the GPU's peak (core/model/flop_count.hpp; none: no MFU).
struct GpuWatch {
  torch::Device device = torch::kCPU;
  double step_flops = 0;
  std::optional<double> peak_flops;
};
// For a GPU run: counts MODEL's FLOPs on one sample of SPEC (cuDNN's benchmark off while it
// does) and looks up the GPU's peak for CFG's precision; one line (rank 0) says what MFU will
// be computed from, or why it will not. A CPU run: the CPU, nothing counted.
GpuWatch watch_gpu(Net& model, const io::DatasetSpec& spec, torch::Device device, const Config& cfg);

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
