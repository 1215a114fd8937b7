// mfu: model FLOPs utilisation of a GPU run — what it is computed from (set up once at start)
// and the figure of a log window.
//
// MFU = the model FLOPs of the window's steps (core/model/flop_count: 3x the forward per
// training sample) / the window's seconds (the same seconds samples/s is computed over) /
// the GPU's data-sheet dense peak for the step's math (bf16/fp16 under --train.amp, TF32 for
// float32). No MFU ("n/a" with the reason, once at start) where the figure would mislead: a
// CPU run, a GPU not in the table, ragged data (each batch is cut to its longest sample, so
// the FLOPs change batch by batch), a TorchScript model (its first forward is left to
// training, for the JIT's profiling), a model with work the count cannot see (cuDNN's RNNs,
// fused attention), or nothing counted.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <optional>

#include "core/config/config.hpp"
#include "core/model/registry.hpp"

namespace lockstep {

// What the log rows read of a rank's GPU: the device, and for MFU the model FLOPs of one
// optimizer step of one rank and the GPU's peak (none: no MFU).
struct GpuWatch {
  torch::Device device = torch::kCPU;
  double step_flops = 0;
  std::optional<double> peak_flops;
};

// For a GPU run: counts MODEL's FLOPs on one sample of SPEC (cuDNN's benchmark off while it
// does) and looks up the GPU's peak for CFG's precision; one line (rank 0) says what MFU is
// computed from, or why there is none. A CPU run: the CPU, nothing counted.
GpuWatch watch_gpu(Net& model, const io::DatasetSpec& spec, torch::Device device, const Config& cfg);

// Percent of WATCH's peak that STEPS steps in SECONDS reach; none without FLOPs, a peak or time.
std::optional<double> mfu_pct(const GpuWatch& watch, int64_t steps, double seconds);

}  // namespace lockstep
