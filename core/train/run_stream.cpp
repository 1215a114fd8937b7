// run_stream: see run_stream.hpp.
#include "core/train/run_stream.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace lockstep {

#ifdef LOCKSTEP_HAVE_CUDA
struct RunStream::Guard {
  explicit Guard(c10::DeviceIndex device)
      : stream(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device)), guard((c10::cuda::device_synchronize(), stream)) {}
  c10::cuda::CUDAStream stream;
  c10::cuda::CUDAStreamGuard guard;
};
#else
struct RunStream::Guard {};
#endif

RunStream::RunStream(torch::Device device) {
#ifdef LOCKSTEP_HAVE_CUDA
  if (device.is_cuda()) guard_ = std::make_unique<Guard>(device.index());
#else
  (void)device;
#endif
}

RunStream::~RunStream() {
#ifdef LOCKSTEP_HAVE_CUDA
  if (guard_) {
    try {
      guard_->stream.synchronize();
    } catch (...) {  // a destructor: an error here was (or will be) reported by the run
    }
  }
#endif
}

}  // namespace lockstep
