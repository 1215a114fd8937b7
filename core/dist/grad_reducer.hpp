// grad_reducer: averages gradients across ranks, bucket by bucket, overlapping backward.
//
// Per optimizer step (every rank, same order):
// 1. prepare(sync): sync is false on the inner micro-steps of --grad-accum (no
//    communication; gradients accumulate locally) and true on the last one;
// 2. during backward, a hook on each parameter copies its gradient (plus what earlier
//    micro-steps accumulated) into its bucket's flat buffer with 1/world folded in; when a
//    bucket is complete it is launched — strictly in bucket order (bucket k only after
//    k-1), so every rank starts the same reductions in the same order;
// 3. finish(): launches what is left (a parameter that got no gradient contributes
//    zeros), waits for the communicator, writes the averages into the gradients. The wait
//    is the step's exposed communication, measured.
// With overlap off, all of 2 happens in finish() (the reference the tests compare to).
// A 16-bit WIRE (--dist.compress bf16|fp16) converts each complete bucket (already divided
// by world, so the sum cannot exceed the largest gradient: no overflow from summing) to
// its own 16-bit buffer before launch and back to float32 after the wait; what goes over
// the network halves. fp16 keeps 11 significant bits but overflows above 65504 (under
// --amp fp16 the loss scaler sees that inf and skips the step, as for any overflow);
// bf16 keeps float32's range with 8 significant bits.
// ALONE_PASS_THROUGH (the trainer's choice): at world size 1 nothing is averaged, so no hook,
// bucket copy or collective runs; finish() only gives a parameter without a gradient zeros,
// as the reduction would (so its momentum and weight decay act as at any world size). This
// also leaves the step free of communication, which a captured CUDA graph needs.
// The destructor removes the hooks. Buffers live on the parameters' device.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <mutex>
#include <vector>

#include "core/dist/bucket_plan.hpp"
#include "core/dist/communicator.hpp"

namespace lockstep {

class GradReducer {
 public:
  GradReducer(std::vector<at::Tensor> params, Communicator& comm, double bucket_mb, bool overlap = true,
              WireType wire = WireType::kF32, bool alone_pass_through = false);
  ~GradReducer();
  GradReducer(const GradReducer&) = delete;
  GradReducer& operator=(const GradReducer&) = delete;

  void prepare(bool sync);
  // Collective when sync. AFTER_WAIT runs once the communicator's operations are complete
  // (NCCL: once the compute stream is ordered after them) and before the averages are
  // written into the gradients: the end of the step's exposed communication.
  void finish(const std::function<void()>& after_wait = {});
  // prepare(true) + finish(): for gradients computed without the reducer watching.
  void average_gradients();

  const std::vector<Bucket>& buckets() const { return buckets_; }
  WireType wire() const { return wire_; }
  bool passes_through() const { return pass_through_; }  // world size 1 with ALONE_PASS_THROUGH
  size_t wire_bytes_per_step() const;  // what one rank hands to the all-reduces per optimizer step
  double exposed_seconds() const { return exposed_s_; }  // of the last finish()
  int launched_in_backward() const { return launched_in_backward_; }  // of the last step

 private:
  void on_grad(size_t param, const at::Tensor& grad);
  void copy_in(size_t param, const at::Tensor* grad);
  void launch_ready();  // mu_ held

  std::vector<at::Tensor> params_;
  Communicator& comm_;
  const bool overlap_;
  const WireType wire_;
  const bool pass_through_;  // world size 1 with ALONE_PASS_THROUGH: no buckets, hooks or collectives
  std::vector<Bucket> buckets_;
  std::vector<at::Tensor> buffers_;  // float32, per bucket
  std::vector<at::Tensor> wire_buffers_;  // 16-bit wire: per bucket; empty for float32
  std::vector<size_t> bucket_of_, slot_of_;  // per parameter
  std::vector<unsigned> hooks_;
  at::Tensor inv_world_;

  std::mutex mu_;  // hooks may run on autograd's device threads
  bool sync_ = false;
  std::vector<char> filled_;       // per parameter, this step
  std::vector<size_t> remaining_;  // per bucket, parameters not yet filled
  size_t next_launch_ = 0;
  int launched_in_backward_ = 0;
  double exposed_s_ = 0.0;
};

}  // namespace lockstep
