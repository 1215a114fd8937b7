// staging_ring: see staging_ring.hpp.
#include "core/data/staging_ring.hpp"

#include "core/base/error.hpp"

namespace lockstep {

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
