// host_buffers: see host_buffers.hpp.
#include "core/data/host_buffers.hpp"

#include <torch/torch.h>

#include "core/base/error.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace lockstep {
namespace {

#ifdef LOCKSTEP_HAVE_CUDA
// done() and wait() run on the loader's thread too: a thread that never set a device would
// make CUDA create a context on device 0 for a rank of another GPU (the guard), and a
// spinning wait would take a core from the read threads (blocking sync: the thread sleeps).
class CudaFence final : public Fence {
 public:
  explicit CudaFence(c10::DeviceIndex device) : device_(device) {}
  void record() override {
    const c10::cuda::CUDAGuard on(device_);
    event_.record(c10::cuda::getCurrentCUDAStream(device_));
  }
  bool done() const override {  // true before the first record()
    const c10::cuda::CUDAGuard on(device_);
    return event_.query();
  }
  void wait() override {
    const c10::cuda::CUDAGuard on(device_);
    event_.synchronize();
  }

 private:
  c10::DeviceIndex device_;
  at::cuda::CUDAEvent event_{cudaEventDisableTiming | cudaEventBlockingSync};
};
#endif

// The CPU's stand-in (tests): a copy out of plain memory is complete when it returns.
class DoneFence final : public Fence {
 public:
  void record() override {}
  bool done() const override { return true; }
  void wait() override {}
};

}  // namespace

HostBuffers host_buffers(c10::Device device) {
  HostBuffers b;
  b.allocate = plain_host_memory;
  b.fence = [] { return std::make_unique<DoneFence>(); };
  if (device.is_cuda()) {
#ifdef LOCKSTEP_HAVE_CUDA
    b.allocate = [](size_t bytes) {
      auto t = std::make_shared<torch::Tensor>(torch::empty(
          {static_cast<int64_t>(bytes)}, torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true)));
      return std::shared_ptr<void>(t, t->data_ptr());
    };
    b.fence = [index = device.index()] { return std::make_unique<CudaFence>(index); };
#else
    LOCKSTEP_REQUIRE(false, "this build has no CUDA support for device " + device.str());
#endif
  }
  return b;
}

}  // namespace lockstep
