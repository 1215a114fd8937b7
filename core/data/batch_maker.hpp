// batch_maker: raw samples (any shard dtype) -> normalised float32 tensors on the device,
// using the per-channel mean/std stored in the dataset's manifest. On a GPU the raw bytes
// go through a pinned host buffer (a DMA copy, not a pageable one); the copy is
// synchronous, so the buffer can be reused at once.
//
// Sequences (shard format v2): a ragged batch is cut to its longest sample's length and
// every padded step is zero after normalisation; sequence targets become CTC's inputs.
#pragma once

#include <torch/types.h>

#include "io/dataset/shard_format.hpp"

namespace lockstep {

// A batch's CTC targets: TARGETS concatenated (int64, on the device), TARGET_LENGTHS [N]
// (int64, CPU), and the inputs' valid lengths LENGTHS [N] (int64, CPU).
struct SequenceTargets {
  torch::Tensor targets, target_lengths, lengths;
};

class BatchMaker {
 public:
  BatchMaker(const io::DatasetSpec& spec, torch::Device device);
  // N samples at RAW (spec.sample_bytes() each) -> [N, sample_shape...] float32, normalised.
  // Ragged data needs the samples' RECORDS: the time axis is cut to the batch's longest
  // sample and padding zeroed.
  torch::Tensor inputs(const void* raw, int64_t n, const int64_t* records = nullptr) const;
  // The class labels of N label records -> [N] int64 on the device.
  torch::Tensor labels(const int64_t* records, int64_t n) const;
  // Valid time steps of N records -> [N] int64 on the CPU (time_steps() when not ragged).
  torch::Tensor lengths(const int64_t* records, int64_t n) const;
  // lengths() for ragged data, an undefined tensor otherwise: what class_logits takes.
  torch::Tensor ragged_lengths(const int64_t* records, int64_t n) const {
    return spec_.ragged ? lengths(records, n) : torch::Tensor();
  }
  SequenceTargets targets(const int64_t* records, int64_t n) const;
  torch::Device device() const { return device_; }

 private:
  io::DatasetSpec spec_;
  torch::Device device_;
  torch::Tensor mean_, inv_std_;  // [1, C, 1, ...] on the device
  mutable torch::Tensor staging_;  // CUDA: pinned host buffer the batch is copied from
};

}  // namespace lockstep
