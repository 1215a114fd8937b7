// staging_ring: see staging_ring.hpp.
#include "core/data/staging_ring.hpp"

#include <torch/torch.h>

#include "core/base/error.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace lockstep {
namespace {

#ifdef LOCKSTEP_HAVE_CUDA
class CudaFence final : public Fence {
 public:
  explicit CudaFence(c10::DeviceIndex device) : device_(device) {}
  void record() override { event_.record(c10::cuda::getCurrentCUDAStream(device_)); }
  bool done() const override { return event_.query(); }
  void wait() override { event_.synchronize(); }

 private:
  c10::DeviceIndex device_;
  at::cuda::CUDAEvent event_{cudaEventDisableTiming};
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

std::unique_ptr<StagingRing> make_staging_ring(size_t slots, c10::Device device) {
  std::function<std::shared_ptr<void>(size_t)> alloc = [](size_t bytes) {
    return std::shared_ptr<void>(::operator new(bytes), [](void* p) { ::operator delete(p); });
  };
  std::function<std::unique_ptr<Fence>()> fence = [] { return std::make_unique<DoneFence>(); };
  if (device.is_cuda()) {
#ifdef LOCKSTEP_HAVE_CUDA
    alloc = [](size_t bytes) {
      auto t = std::make_shared<torch::Tensor>(torch::empty(
          {static_cast<int64_t>(bytes)}, torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true)));
      return std::shared_ptr<void>(t, t->data_ptr());
    };
    fence = [index = device.index()] { return std::make_unique<CudaFence>(index); };
#else
    LOCKSTEP_REQUIRE(false, "this build has no CUDA support for device " + device.str());
#endif
  }
  return std::make_unique<StagingRing>(slots, std::move(alloc), std::move(fence));
}

StagingRing::StagingRing(size_t slots, std::function<std::shared_ptr<void>(size_t)> alloc,
                         std::function<std::unique_ptr<Fence>()> fence)
    : slots_(slots), alloc_(std::move(alloc)), make_fence_(std::move(fence)) {
  LOCKSTEP_REQUIRE(slots > 0, "a staging ring needs at least one slot");
}

void* StagingRing::acquire(size_t bytes) {
  LOCKSTEP_REQUIRE(!held_, "staging ring: acquire() twice without release()");
  Slot& s = slots_[next_];
  if (s.fence && !s.fence->done()) {
    ++waits_;
    s.fence->wait();
  }
  if (!s.memory || s.bytes < bytes) {  // grows (a larger batch): the old copy is done, as above
    s.memory = alloc_(bytes);
    s.bytes = bytes;
  }
  held_ = true;
  return s.memory.get();
}

void StagingRing::release() {
  LOCKSTEP_REQUIRE(held_, "staging ring: release() without acquire()");
  Slot& s = slots_[next_];
  if (!s.fence) s.fence = make_fence_();
  s.fence->record();
  held_ = false;
  next_ = (next_ + 1) % slots_.size();
}

}  // namespace lockstep
