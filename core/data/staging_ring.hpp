// staging_ring: the host buffers a batch goes through on its way to a GPU, reused only once
// the device has finished copying out of them.
//
// A copy from pinned host memory with non_blocking=true returns before the DMA has run; the
// buffer must not be written again until it has. Each slot carries a fence recorded on the
// copying stream after the copy is issued: acquire() hands out the oldest slot, waiting for
// its fence only if that copy is still in flight (it was issued SLOTS batches ago, so it
// normally is long done: no host sync in a steady step). The memory and fences come from
// HostBuffers (core/base/fence.hpp): pinned memory and CUDA events on a GPU
// (core/data/host_buffers), fakes in tests/unit/data/test_staging_ring.cpp.
//   ring.acquire(bytes) -> a buffer; write it; issue the copies from it; ring.release();
// One batch at a time: acquire, then release, then the next acquire.
#pragma once

#include <c10/core/Device.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/base/fence.hpp"

namespace lockstep {

class StagingRing {
 public:
  // SLOTS buffers from BUFFERS (pinned memory on a GPU).
  StagingRing(size_t slots, HostBuffers buffers);
  void* acquire(size_t bytes);
  void release();
  int64_t waits() const { return waits_; }  // acquires that found their slot's copy in flight

 private:
  struct Slot {
    std::shared_ptr<void> memory;
    size_t bytes = 0;
    std::unique_ptr<Fence> fence;  // null until the slot's first release
  };
  std::vector<Slot> slots_;
  HostBuffers buffers_;
  size_t next_ = 0;
  bool held_ = false;
  int64_t waits_ = 0;
};

// A ring for DEVICE: host_buffers(DEVICE) — on a GPU, pinned memory and CUDA events recorded
// on the stream current at release(); on the CPU (tests), plain memory and fences that are
// done at once.
std::unique_ptr<StagingRing> make_staging_ring(size_t slots, c10::Device device);

}  // namespace lockstep
