// mfu: see mfu.hpp.
#include "core/train/mfu.hpp"

#include <fmt/format.h>

#include <string>

#include "core/base/log.hpp"
#include "core/model/flop_count.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <ATen/Context.h>
#include <cuda_runtime_api.h>
#endif

namespace lockstep {
namespace {

#ifdef LOCKSTEP_HAVE_CUDA
// cuDNN's benchmark flag off for a scope (no algorithm search for a one-sample batch).
class NoCudnnBenchmark {
 public:
  NoCudnnBenchmark() : was_(at::globalContext().benchmarkCuDNN()) { at::globalContext().setBenchmarkCuDNN(false); }
  ~NoCudnnBenchmark() { at::globalContext().setBenchmarkCuDNN(was_); }
  NoCudnnBenchmark(const NoCudnnBenchmark&) = delete;
  NoCudnnBenchmark& operator=(const NoCudnnBenchmark&) = delete;

 private:
  bool was_;
};
#endif

}  // namespace

GpuWatch watch_gpu(Net& model, const io::DatasetSpec& spec, torch::Device device, const Config& cfg) {
  GpuWatch w;
  if (!device.is_cuda()) return w;
  w.device = device;
#ifdef LOCKSTEP_HAVE_CUDA
  cudaDeviceProp prop{};
  const bool named = cudaGetDeviceProperties(&prop, device.index()) == cudaSuccess;
  const bool half = cfg.amp != Amp::kNone;
  std::string why;
  FlopCount f;
  if (spec.ragged) {
    why = "ragged batches: each is cut to its longest sample, so its FLOPs differ";
  } else if (cfg.model.rfind("torchscript:", 0) == 0) {
    why = "a TorchScript model (its first forward is left to training)";
  } else {
    const NoCudnnBenchmark no_search;
    f = count_forward_flops(model, spec, device);
    if (!f.unseen.empty()) why = "the forward runs work the count cannot see (" + f.unseen + ")";
    else if (f.layers == 0) why = "no convolution or matrix product counted in the model's forward";
  }
  if (named) w.peak_flops = gpu_peak_flops(prop.name, half);
  if (why.empty() && !w.peak_flops) why = std::string("no peak known for ") + (named ? prop.name : device.str());
  if (!why.empty()) {
    w.peak_flops.reset();
    log::info0("MFU: n/a (" + why + ")");
    return w;
  }
  w.step_flops = f.train_per_sample() * static_cast<double>(cfg.batch_size * cfg.grad_accum);
  log::info0(fmt::format("MFU in log rows: {:.3g} GFLOP per training sample (3x the forward's {} convolutions and "
                         "matrix products), {} peak {:.0f} TFLOP/s ({})",
                         f.train_per_sample() / 1e9, f.layers, prop.name, *w.peak_flops / 1e12,
                         half ? "bf16/fp16" : "TF32"));
#else
  (void)model, (void)spec, (void)cfg;
#endif
  return w;
}

std::optional<double> mfu_pct(const GpuWatch& watch, int64_t steps, double seconds) {
  if (watch.step_flops <= 0 || !watch.peak_flops || *watch.peak_flops <= 0 || seconds <= 0) return std::nullopt;
  return 100.0 * watch.step_flops * static_cast<double>(steps) / seconds / *watch.peak_flops;
}

}  // namespace lockstep
