// grad_reducer: averages gradients across ranks, bucket by bucket.
//
// Per step (every rank, same order):
// 1. for each bucket (bucket_plan order), copy each parameter's gradient into the
//    bucket's flat buffer with 1/world folded into the copy;
// 2. all-reduce (sum) the buffer through the Communicator;
// 3. copy the averaged values back into the gradients.
// Buffers are allocated once, on the parameters' device. This version reduces after
// backward; launching buckets from autograd hooks on a communication thread, so they
// overlap backward, is the distributed-core issue's (#4) work and keeps this interface.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "core/bucket_plan.hpp"
#include "core/communicator.hpp"

namespace lockstep {

class GradReducer {
 public:
  GradReducer(std::vector<at::Tensor> params, Communicator& comm, double bucket_mb);
  GradReducer(const GradReducer&) = delete;
  GradReducer& operator=(const GradReducer&) = delete;

  void average_gradients();  // collective
  const std::vector<Bucket>& buckets() const { return buckets_; }
  double comm_seconds() const { return comm_seconds_; }  // total time inside all-reduce

 private:
  std::vector<at::Tensor> params_;
  Communicator& comm_;
  std::vector<Bucket> buckets_;
  std::vector<at::Tensor> buffers_;
  at::Tensor inv_world_;
  double comm_seconds_ = 0.0;
};

// Broadcasts every tensor in TENSORS from rank 0 (initial parameters and buffers).
// Collective.
void broadcast_tensors(const std::vector<at::Tensor>& tensors, Communicator& comm);

}  // namespace lockstep
