// grad_reducer: averages gradients across ranks, bucket by bucket, overlapping backward.
//
// Each bucket is one flat float32 buffer; each parameter owns a slot in it, viewed with the
// parameter's own shape and strides (a channels-last weight's slot is in channels-last
// order). After a reduction every parameter's .grad IS its slot (gradients as views of
// their bucket, as c10d's gradient_as_bucket_view): the averages are never copied back.
// Per optimizer step (every rank, same order):
// 1. prepare(sync): sync is false on the inner micro-steps of --grad-accum (no
//    communication; gradients accumulate locally) and true on the last one;
// 2. during backward, a hook that runs after autograd has accumulated a parameter's
//    gradient (the AccumulateGrad node's post hook) writes that gradient / world into its
//    slot — nothing when .grad already is the slot (the optimizer zeroed it in place: only
//    the 1/world is applied) — and makes the slot the parameter's .grad; when a bucket is
//    complete it is launched — strictly in bucket order (bucket k only after k-1), so every
//    rank starts the same reductions in the same order. A parameter whose gradient is
//    accumulated a second time in one step (two backward passes under one prepare(true), a
//    weight shared across a re-entrant checkpointed block) is an error, raised once autograd
//    has added it into the slot (its bucket may be on the wire: the step is lost);
// 3. finish(): fills the slots of parameters no hook saw (a parameter that got no gradient
//    contributes zeros), launches what is left and waits for the communicator. The wait is
//    the step's exposed communication, measured.
// With overlap off, all of 2 happens in finish() (the reference the tests compare to).
// The next step's zero_grad (set to none) drops the views; backward hands each parameter a
// fresh gradient again and the hook writes it into the same slot. Code that replaces a
// .grad between steps is safe: a .grad that is not its slot is always copied in.
// A 16-bit WIRE (--dist.compress bf16|fp16) converts each complete bucket (already divided
// by world, so the sum cannot exceed the largest gradient: no overflow from summing) to
// its own 16-bit buffer before launch and back into the float32 bucket after the wait; what
// goes over the network halves. fp16 keeps 11 significant bits but overflows above 65504
// (under --amp fp16 the loss scaler sees that inf and skips the step, as for any overflow);
// bf16 keeps float32's range with 8 significant bits.
// ALONE_PASS_THROUGH (the trainer's choice): at world size 1 nothing is averaged, so no hook,
// bucket or collective exists; finish() only gives a parameter without a gradient zeros, as
// the reduction would (so its momentum and weight decay act as at any world size).
// The hooks are attached at the first prepare(), on the training thread: an AccumulateGrad
// node runs on the CUDA stream current when it was made, which must be the step's (the
// run's stream, core/train/run_stream.hpp; a node of the legacy stream would order every
// gradient across streams and make a CUDA graph's capture fail). The destructor removes them.
// The slots are made at the first step too (after a resume's load). Buffers live on the
// parameters' device; parameters must be float32 and listed once. Every rank must give its
// parameters the same strides (the slots' layout; Session's preflight checks).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/dist/bucket_plan.hpp"
#include "core/dist/communicator.hpp"

namespace torch::autograd {
struct Node;
}

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
  // (NCCL: once the compute stream is ordered after them) and before a 16-bit wire's sums
  // are widened back into the buckets: the end of the step's exposed communication.
  void finish(const std::function<void()>& after_wait = {});
  // One step's reduction of the gradients in .grad (no hooks attached): for gradients computed
  // without the reducer watching.
  void average_gradients();
  // After a CUDA graph that holds this reducer's all-reduces was replayed: the watchdog
  // watches the replay as WHAT (Communicator::watch_queued). Nothing when passing through.
  void watch_replayed(const std::string& what);

  const std::vector<Bucket>& buckets() const { return buckets_; }
  // Parameter I's slot in its bucket (its shape and strides); undefined when passing through
  // or before the first step.
  const at::Tensor& slot(size_t i) const { return slots_[i]; }
  WireType wire() const { return wire_; }
  bool passes_through() const { return pass_through_; }  // world size 1 with ALONE_PASS_THROUGH
  int world() const { return comm_.size(); }
  size_t wire_bytes_per_step() const;  // what one rank hands to the all-reduces per optimizer step
  double exposed_seconds() const { return exposed_s_; }  // of the last finish()
  int launched_in_backward() const { return launched_in_backward_; }  // of the last step

 private:
  void make_slots();    // mu_ held; once (none when passing through)
  void attach_hooks();  // mu_ held
  void begin_step(bool sync);  // mu_ held
  void on_grad(size_t param);
  void fill_slot(size_t param);  // mu_ held
  void launch_ready();  // mu_ held

  std::vector<at::Tensor> params_;
  Communicator& comm_;
  const bool overlap_;
  const WireType wire_;
  const bool pass_through_;  // world size 1 with ALONE_PASS_THROUGH: no buckets, hooks or collectives
  std::vector<Bucket> buckets_;
  std::vector<at::Tensor> buffers_;  // float32, per bucket
  std::vector<at::Tensor> wire_buffers_;  // 16-bit wire: per bucket; empty for float32
  std::vector<size_t> bucket_of_;  // per parameter
  std::vector<at::Tensor> slots_;  // per parameter: a view of its bucket with its shape and strides
  bool slots_made_ = false;
  // Per parameter: its AccumulateGrad node (held: the parameter holds it weakly) and the key
  // of the hook added to it.
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<uintptr_t> hooks_;
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
