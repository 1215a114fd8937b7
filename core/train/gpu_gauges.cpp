// gpu_gauges: see gpu_gauges.hpp.
#include "core/train/gpu_gauges.hpp"

#include <dlfcn.h>

#include <array>

#ifdef LOCKSTEP_HAVE_CUDA
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

}  // namespace lockstep
