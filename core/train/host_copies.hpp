// host_copies: tensors copied to host memory in stream order, without a host sync — the
// copies a checkpoint serialises on the writer's thread (state_snapshot) and the best
// weights every rank keeps for the final test (checkpointer).
//
// add(T) returns T's copy in host memory: from a GPU, pinned and queued on the current
// stream (a blocking pageable copy when no page-locked memory is left); on the CPU, made at
// once. The copy has T's strides and requires_grad flag; no add() after seal(), no wait()
// before it once something was added (on the CPU too). Every copy is queued on the stream
// current at the first add() (another is refused), one device's. seal() records where they
// end in that stream; wait() blocks until they are complete (any thread, once sealed).
// Between add() and wait() the copies must not be read. Pinned blocks return to torch's
// caching host allocator when the copies are dropped, and are reused from there.
#pragma once

#include <torch/types.h>

#include <memory>
#include <vector>

namespace lockstep {

class HostCopies {
 public:
  HostCopies();
  ~HostCopies();
  HostCopies(const HostCopies&) = delete;
  HostCopies& operator=(const HostCopies&) = delete;

  torch::Tensor add(const torch::Tensor& t);  // an undefined T is returned as it is
  void keep(const torch::Tensor& host);       // held with the copies (already on the host)
  void seal();
  void wait() const;

  const std::vector<torch::Tensor>& tensors() const { return copies_; }

 private:
  struct Event;  // where the queued copies end (CUDA)
  std::vector<torch::Tensor> copies_;
  bool added_ = false, sealed_ = false;
  std::unique_ptr<Event> done_;  // set when a copy was queued on a GPU stream
};

}  // namespace lockstep
