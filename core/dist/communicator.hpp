// communicator: how gradients are summed across ranks — the interface. Two backends:
// MpiCommunicator (mpi_communicator.hpp: host memory, MPI_Allreduce on a communication
// thread) and NcclCommunicator (nccl_communicator.hpp: device memory, its own CUDA
// stream ordered after the compute stream with events).
//
// Contract:
// 1. every rank starts the same operations, on buffers of the same length, in the same
//    order (operations run in start order);
// 2. start_allreduce returns at once; the buffer must stay untouched until wait_all;
// 3. wait_all returns when every started operation is complete (NCCL: when the compute
//    stream is ordered after them), and rethrows an error from the communication thread.
// Pointers are host pointers for MPI, device pointers for NCCL.
//
// Element types on the wire (--dist.compress): float32, or 16-bit bfloat16 / float16.
// 16-bit sums are formed in float32 and rounded once per combine (NCCL natively; MPI
// through user-defined operations, half_sum.hpp).
#pragma once

#include <cstddef>
#include <string>

namespace lockstep {

enum class WireType { kF32, kBF16, kF16 };
inline size_t wire_bytes(WireType t) { return t == WireType::kF32 ? 4 : 2; }
inline const char* wire_name(WireType t) {
  return t == WireType::kF32 ? "float32" : t == WireType::kBF16 ? "bfloat16" : "float16";
}

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // WHAT names the operation in watchdog and error messages ("gradient bucket 2"); N
  // counts elements of TYPE.
  virtual void start_allreduce(void* data, size_t n, WireType type, const std::string& what) = 0;
  void start_allreduce(float* data, size_t n, const std::string& what) {
    start_allreduce(data, n, WireType::kF32, what);
  }
  virtual void wait_all() = 0;
  virtual void broadcast(float* data, size_t n, int root) = 0;
  // Whether started operations may run in the background while the caller computes
  // (overlap). Off: they run when wait_all is called, on the caller's thread.
  virtual void set_background(bool on) { (void)on; }
  // Has the watchdog watch, as WHAT, the work queued so far on the caller's stream. For
  // collectives that were not started one by one: a replayed CUDA graph's (NCCL: their own
  // events were captured, never recorded, so nothing else watches them). A no-op where
  // operations are the host's own (MPI).
  virtual void watch_queued(const std::string& what) { (void)what; }
  // Ends the communicator on the normal path (NCCL: drain, ncclCommDestroy). Collective.
  // Without it, the destructor aborts instead (the error path).
  virtual void destroy() {}
  void allreduce_sum(float* data, size_t n) {
    start_allreduce(data, n, "allreduce");
    wait_all();
  }
};

}  // namespace lockstep
