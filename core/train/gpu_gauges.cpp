// gpu_gauges: see gpu_gauges.hpp.
#include "core/train/gpu_gauges.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <array>

#include "core/base/log.hpp"
#include "core/model/flop_count.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <ATen/Context.h>
#include <cuda_runtime_api.h>
#endif

namespace lockstep {
namespace {

// The part of NVML's C API read here (nvml.h; its ABI is stable), declared rather than
// included: the library is opened at run time.
using NvmlReturn = int;  // nvmlReturn_t: 0 is NVML_SUCCESS
struct NvmlDeviceSt;
using NvmlDevice = NvmlDeviceSt*;
struct NvmlUtilization {
  unsigned int gpu, memory;
};
struct NvmlMemory {
  unsigned long long total, free, used;
};

template <typename F>
bool bind(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

}  // namespace

struct GpuGauges::Nvml {
  void* lib = nullptr;
  NvmlReturn (*init)() = nullptr;  // nvmlInit_v2
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*by_bus_id)(const char*, NvmlDevice*) = nullptr;  // nvmlDeviceGetHandleByPciBusId_v2
  NvmlReturn (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*memory)(NvmlDevice, NvmlMemory*) = nullptr;
  NvmlReturn (*power)(NvmlDevice, unsigned int*) = nullptr;  // milliwatts
  NvmlDevice device = nullptr;
  bool initialised = false;
  ~Nvml() {
    if (initialised) shutdown();
    if (lib) dlclose(lib);
  }
};

GpuGauges::GpuGauges(torch::Device device) {
  if (!device.is_cuda()) {
    why_not_ = "not a GPU run";
    return;
  }
  auto n = std::make_unique<Nvml>();
  n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!n->lib) {
    const char* err = dlerror();
    why_not_ = std::string("NVML not loaded (") + (err ? err : "libnvidia-ml.so.1") + ")";
    return;
  }
  if (!bind(n->lib, "nvmlInit_v2", &n->init) || !bind(n->lib, "nvmlShutdown", &n->shutdown) ||
      !bind(n->lib, "nvmlDeviceGetHandleByPciBusId_v2", &n->by_bus_id) ||
      !bind(n->lib, "nvmlDeviceGetUtilizationRates", &n->utilization) ||
      !bind(n->lib, "nvmlDeviceGetMemoryInfo", &n->memory) || !bind(n->lib, "nvmlDeviceGetPowerUsage", &n->power)) {
    why_not_ = "NVML lacks a function lockstep reads (an old driver?)";
    return;
  }
  if (const NvmlReturn rc = n->init(); rc != 0) {
    why_not_ = "nvmlInit failed (NVML error " + std::to_string(rc) + ")";
    return;
  }
  n->initialised = true;
#ifdef LOCKSTEP_HAVE_CUDA
  std::array<char, 64> bus{};
  if (const cudaError_t rc = cudaDeviceGetPCIBusId(bus.data(), static_cast<int>(bus.size()), device.index());
      rc != cudaSuccess) {
    why_not_ = std::string("no PCI bus id for ") + device.str() + " (" + cudaGetErrorString(rc) + ")";
    return;
  }
  if (const NvmlReturn rc = n->by_bus_id(bus.data(), &n->device); rc != 0) {
    why_not_ = std::string("NVML does not know the GPU at ") + bus.data() + " (NVML error " + std::to_string(rc) + ")";
    return;
  }
  nvml_ = std::move(n);
#else
  why_not_ = "this build has no CUDA";
#endif
}

GpuGauges::~GpuGauges() = default;

GpuReading GpuGauges::read() const {
  GpuReading r;
  if (!nvml_) return r;
  NvmlUtilization u{};
  if (nvml_->utilization(nvml_->device, &u) == 0) r.util_pct = u.gpu;
  NvmlMemory m{};
  if (nvml_->memory(nvml_->device, &m) == 0) r.mem_gib = static_cast<double>(m.used) / (1024.0 * 1024.0 * 1024.0);
  unsigned int mw = 0;
  if (nvml_->power(nvml_->device, &mw) == 0) r.power_w = mw / 1000.0;
  return r;
}

GpuWatch watch_gpu(Net& model, const io::DatasetSpec& spec, torch::Device device, const Config& cfg) {
  GpuWatch w;
  if (!device.is_cuda()) return w;
  w.device = device;
#ifdef LOCKSTEP_HAVE_CUDA
  const bool bench = at::globalContext().benchmarkCuDNN();
  at::globalContext().setBenchmarkCuDNN(false);  // no algorithm search for a one-sample batch
  const FlopCount f = count_forward_flops(model, spec, device);
  at::globalContext().setBenchmarkCuDNN(bench);
  cudaDeviceProp prop{};
  const bool named = cudaGetDeviceProperties(&prop, device.index()) == cudaSuccess;
  const bool half = cfg.amp != Amp::kNone;
  if (named) w.peak_flops = gpu_peak_flops(prop.name, half);
  if (f.layers > 0) w.step_flops = f.train_per_sample() * static_cast<double>(cfg.batch_size * cfg.grad_accum);
  if (w.step_flops > 0 && w.peak_flops)
    log::info0(fmt::format("MFU in log rows: {:.3g} GFLOP per training sample (3x the forward's {} convolutions and "
                           "matrix products), {} peak {:.0f} TFLOP/s ({})",
                           f.train_per_sample() / 1e9, f.layers, prop.name, *w.peak_flops / 1e12,
                           half ? "bf16/fp16" : "TF32"));
  else
    log::info0(std::string("MFU: n/a (") +
               (w.step_flops <= 0 ? "no convolution or matrix product counted in the model's forward"
                                  : std::string("no peak known for ") + (named ? prop.name : device.str())) +
               ")");
#endif
  return w;
}

}  // namespace lockstep
