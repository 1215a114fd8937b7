// fence: when host memory that a device copy reads may be written again.
//
// A copy from pinned host memory with non_blocking=true returns before the DMA has run; the
// memory must not be written again until it has. The code that issues the copies records a
// fence after them; the code that writes the memory next checks done() (never waits) and
// wait()s only when the copy is still in flight. An interface, so that the reuse rule is
// tested on the CPU with a fake one; core/data/host_buffers gives CUDA events on a GPU.
// HostBuffers pairs the memory with its fences: pinned memory and CUDA events for a GPU,
// plain memory and fences that are done at once for the CPU; io's loader allocates its
// batches through it without knowing which.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <new>

namespace lockstep {

class Fence {
 public:
  virtual ~Fence() = default;
  virtual void record() = 0;       // after the copies out of the memory are issued
  virtual bool done() const = 0;   // those copies have completed (never waits; true if never recorded)
  virtual void wait() = 0;         // blocks until they have
};

struct HostBuffers {
  std::function<std::shared_ptr<void>(size_t)> allocate;  // BYTES of memory a device copy may read
  std::function<std::unique_ptr<Fence>()> fence;            // a fence for copies out of it
};

// BYTES of plain (pageable) host memory: the CPU's HostBuffers memory, and a loader's own.
inline std::shared_ptr<void> plain_host_memory(size_t bytes) {
  return std::shared_ptr<void>(::operator new(bytes), [](void* p) { ::operator delete(p); });
}

}  // namespace lockstep
