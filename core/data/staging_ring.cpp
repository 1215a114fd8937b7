// staging_ring: see staging_ring.hpp.
#include "core/data/staging_ring.hpp"

#include "core/base/error.hpp"
#include "core/data/host_buffers.hpp"

namespace lockstep {

std::unique_ptr<StagingRing> make_staging_ring(size_t slots, c10::Device device) {
  return std::make_unique<StagingRing>(slots, host_buffers(device));
}

StagingRing::StagingRing(size_t slots, HostBuffers buffers) : slots_(slots), buffers_(std::move(buffers)) {
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
    s.memory = buffers_.allocate(bytes);
    s.bytes = bytes;
  }
  held_ = true;
  return s.memory.get();
}

void StagingRing::release() {
  LOCKSTEP_REQUIRE(held_, "staging ring: release() without acquire()");
  Slot& s = slots_[next_];
  if (!s.fence) s.fence = buffers_.fence();
  s.fence->record();
  held_ = false;
  next_ = (next_ + 1) % slots_.size();
}

}  // namespace lockstep
