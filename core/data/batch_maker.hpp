// batch_maker: raw samples (any shard dtype) -> normalised float32 tensors on the device,
// using the per-channel mean/std stored in the dataset's manifest.
// On a GPU every upload (samples, labels, lengths, CTC targets) goes through a ring of
// pinned host buffers (staging_ring.hpp) with non_blocking=true: the host queues the copy
// and goes on, a buffer is written again only after its copy has completed, and samples
// travel in their stored dtype (uint8 images: a quarter of float32's bytes) and are
// converted and normalised on the device. These copies run on the compute stream; a training
// step's batch comes through BatchFeed instead (one copy on a copy stream, a batch ahead:
// batch_feed.hpp) and is normalised here by normalise(). On the CPU the conversion reads
// the loader's buffer directly; the arithmetic is the same on both.
// With CHANNELS_LAST (a conv net running channels-last) 4-D and 5-D batches come out in
// NHWC / NDHWC layout, converted and laid out in one pass.
//
// Sequences (shard format v2): a ragged batch is cut to its longest sample's length and
// every padded step is zero after normalisation; sequence targets become CTC's inputs.
#pragma once

#include <torch/types.h>

#include <memory>

#include "core/data/staging_ring.hpp"
#include "io/dataset/shard_format.hpp"

namespace lockstep {

// A batch's CTC targets: TARGETS concatenated (int64, on the device), TARGET_LENGTHS [N]
// (int64, CPU), the inputs' valid lengths LENGTHS [N] (int64, CPU), and NEEDED [N] (int64,
// CPU): the fewest frames an alignment of each target takes (io::ctc_frames_needed).
struct SequenceTargets {
  torch::Tensor targets, target_lengths, lengths, needed;
};

class BatchMaker {
 public:
  // STAGE: uploads go through the staging rings (the default on a GPU). On the CPU it is for
  // tests: the same path with plain memory and fences that are done at once.
  BatchMaker(const io::DatasetSpec& spec, torch::Device device, bool stage, bool channels_last = false);
  BatchMaker(const io::DatasetSpec& spec, torch::Device device) : BatchMaker(spec, device, device.is_cuda()) {}
  // N samples at RAW (spec.sample_bytes() each) -> [N, sample_shape...] float32, normalised.
  // Ragged data needs the samples' RECORDS: the time axis is cut to the batch's longest
  // sample and padding zeroed.
  torch::Tensor inputs(const void* raw, int64_t n, const int64_t* records = nullptr) const;
  // SAMPLES [N, sample_shape...] in the stored dtype, already on the device (BatchFeed) ->
  // what inputs() gives for them, bit for bit. No host sync, and for fixed-shape data no
  // host work at all: what a captured step runs (static_step.hpp). RECORDS: as inputs().
  torch::Tensor normalise(const torch::Tensor& samples, const int64_t* records = nullptr) const;
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
  // HOST (on the CPU, any layout) to the device: staged, through a ring slot, non_blocking
  // (HOST may be freed on return); else HOST itself on the CPU.
  torch::Tensor upload(const torch::Tensor& host) const;

 private:
  int64_t longest(const int64_t* records, int64_t n) const;  // ragged: the batch's longest sample

  io::DatasetSpec spec_;
  torch::Device device_;
  bool channels_last_;
  torch::Tensor mean_, inv_std_;  // [1, C, 1, ...] on the device
  mutable std::unique_ptr<StagingRing> batches_, small_;  // staged only: sample batches, the rest
};

}  // namespace lockstep
