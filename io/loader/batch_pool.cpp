// batch_pool: see batch_pool.hpp.
#include "io/loader/batch_pool.hpp"

#include <cstring>

#include "core/base/error.hpp"

namespace lockstep::io {

BatchPool::BatchPool(const DatasetSpec& spec, int64_t batch, size_t count, const HostBuffers* buffers)
    : batch_(batch), batches_(count) {
  LOCKSTEP_REQUIRE(batch >= 1, "batch size must be at least 1");
  LOCKSTEP_REQUIRE(count >= 1, "a batch pool needs at least one batch");
  const size_t bytes = static_cast<size_t>(batch) * spec.sample_bytes();
  for (Batch& b : batches_) {
    std::shared_ptr<void> memory = buffers ? buffers->allocate(bytes) : plain_host_memory(bytes);
    std::memset(memory.get(), 0, bytes);  // defined bytes before the first fill
    b.samples = static_cast<unsigned char*>(memory.get());
    b.labels.resize(static_cast<size_t>(batch * spec.record_width()));
    memory_.push_back(std::move(memory));
    if (buffers) {
      fences_.push_back(buffers->fence());
      b.reuse = fences_.back().get();
    }
  }
}

BatchPool::~BatchPool() {
  for (const std::unique_ptr<Fence>& f : fences_) {
    try {
      if (!f->done()) f->wait();
    } catch (...) {  // a destructor: the run reports (or has reported) the device's error
    }
  }
}

void BatchPool::take() {
  LOCKSTEP_REQUIRE(!taken_, "batch pool: a second loader would fill batches the first one fills");
  taken_ = true;
}

bool BatchPool::wait_for_reuse(Batch& b) {
  if (!b.reuse || b.reuse->done()) return false;
  b.reuse->wait();
  return true;
}

}  // namespace lockstep::io
