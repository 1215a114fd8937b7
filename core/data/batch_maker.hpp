// batch_maker: raw samples (any shard dtype) -> normalised float32 tensors on the device,
// using the per-channel mean/std stored in the dataset's manifest. On a GPU the raw bytes
// go through a pinned host buffer (a DMA copy, not a pageable one); the copy is
// synchronous, so the buffer can be reused at once.
#pragma once

#include <torch/types.h>

#include "io/dataset/shard_format.hpp"

namespace lockstep {

class BatchMaker {
 public:
  BatchMaker(const io::DatasetSpec& spec, torch::Device device);
  // N samples at RAW (spec.sample_bytes() each) -> [N, sample_shape...] float32, normalised.
  torch::Tensor inputs(const void* raw, int64_t n) const;
  torch::Tensor labels(const int64_t* labels, int64_t n) const;
  torch::Device device() const { return device_; }

 private:
  io::DatasetSpec spec_;
  torch::Device device_;
  torch::Tensor mean_, inv_std_;  // [1, C, 1, ...] on the device
  mutable torch::Tensor staging_;  // CUDA: pinned host buffer the batch is copied from
};

}  // namespace lockstep
