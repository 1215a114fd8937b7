// host_copies: see host_copies.hpp.
#include "core/train/host_copies.hpp"

#include <torch/torch.h>

#include <optional>

#include "core/base/error.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace lockstep {

struct HostCopies::Event {
  c10::DeviceIndex device = 0;  // the copies' device
#ifdef LOCKSTEP_HAVE_CUDA
  std::optional<c10::cuda::CUDAStream> stream;  // the stream the copies were queued on
  at::cuda::CUDAEvent event{cudaEventDisableTiming};
#endif
};

HostCopies::HostCopies() = default;
HostCopies::~HostCopies() = default;

torch::Tensor HostCopies::add(const torch::Tensor& t) {
  LOCKSTEP_REQUIRE(!sealed_, "a host copy added after seal()");
  if (!t.defined()) return t;
  torch::NoGradGuard no_grad;
  torch::Tensor c;
  if (t.is_cuda()) {
    try {
      c = torch::empty_like(t, t.options().device(torch::kCPU).pinned_memory(true));
    } catch (const c10::Error&) {  // no page-locked memory left (memlock limits): a blocking copy
      c = torch::Tensor();
    }
    if (c.defined()) {
      if (!done_) done_ = std::make_unique<Event>();
#ifdef LOCKSTEP_HAVE_CUDA
      const c10::cuda::CUDAStream now = c10::cuda::getCurrentCUDAStream(t.device().index());
      if (!done_->stream) done_->stream = now;
      LOCKSTEP_REQUIRE(*done_->stream == now, "host copies queued on two streams");
#endif
      done_->device = t.device().index();
      c.copy_(t, /*non_blocking=*/true);
    } else {
      c = t.to(torch::kCPU, /*non_blocking=*/false, /*copy=*/true);
    }
  } else {
    c = t.clone();
  }
  if (t.requires_grad()) c.set_requires_grad(true);
  copies_.push_back(c);
  added_ = true;
  return c;
}

void HostCopies::keep(const torch::Tensor& host) { copies_.push_back(host); }

void HostCopies::seal() {
  sealed_ = true;
#ifdef LOCKSTEP_HAVE_CUDA
  if (done_) done_->event.record(*done_->stream);  // where the copies were queued, whatever is current now
#endif
}

void HostCopies::wait() const {
  LOCKSTEP_REQUIRE(sealed_ || !added_, "host copies waited for before seal()");
#ifdef LOCKSTEP_HAVE_CUDA
  if (done_) {
    const c10::cuda::CUDAGuard on(done_->device);  // another thread: no context on device 0
    done_->event.synchronize();
  }
#endif
}

}  // namespace lockstep
