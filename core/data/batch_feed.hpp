// batch_feed: a training batch to the device in one copy, on a copy stream of its own, while
// the device is still computing the steps before it.
//
// The loader's batch — the samples in their stored dtype (uint8 images: a quarter of
// float32's bytes) and the label records' class column — is packed into one pinned host block
// (a StagingRing slot) and sent by one non_blocking copy into one of kSlots device landing
// blocks, on the copy stream. When the loader's batch is already in pinned memory
// (io/loader/batch_pool: the training loader on a GPU) the samples are copied straight out
// of it and only the labels are packed: no host copy of the batch on the training thread;
// the batch's fence is recorded after its copy, and the loader fills it again only once the
// fence is done. Two events order the copies, both on the device (no host sync):
//   - the compute stream (the current one at feed()) waits for the copy before it reads the
//     batch;
//   - the copy stream waits, before it writes a landing block again, for the compute stream
//     to pass done() of the batch that last used it (and, for a block just allocated, for the
//     compute stream to pass the allocation: the caching allocator may hand back memory the
//     compute stream's queued kernels still use).
// So batch k+1's copy runs beside step k whenever the host is ahead of the device, as it is
// in a steady step: "one batch ahead" without reordering the loader. The pinned host slot is
// written again only after its copy has completed (the ring's fence, recorded on the copy
// stream).
//   FedBatch f = feed.feed(raw, n, records);   read f.samples / f.labels on the compute stream
//   ... forward, backward (the labels are read there too) ...
//   feed.done();                               the reads are issued: the block may be reused
// One batch at a time: feed, then done, then the next feed.
// STAGE on the CPU (tests): the same packing, slots and copies out of plain memory, fences
// done at once. Without STAGE (the CPU's default) nothing is copied: the samples are a view
// of the loader's buffer (read them before the loader's next batch) and the labels a tensor.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/data/staging_ring.hpp"
#include "io/dataset/shard_format.hpp"

namespace lockstep {

// The torch dtype samples of stored dtype T travel in.
torch::ScalarType stored_scalar_type(io::DType t);

struct FedBatch {
  torch::Tensor
      samples;  // [N, sample_shape...] in the stored dtype (ragged: full length), on the device
  torch::Tensor labels;  // [N] int64 on the device: each record's first column (the class)
};

class BatchFeed {
 public:
  static constexpr size_t kSlots = 3;  // landing blocks (and pinned host slots: one more)
  // COPY_STREAM (a GPU): the copies on the feed's own stream; false: on the current stream,
  // in order with the steps (no overlap, no events: --train.copy-stream false).
  BatchFeed(const io::DatasetSpec& spec, torch::Device device, bool stage, bool copy_stream = true);
  BatchFeed(const io::DatasetSpec& spec, torch::Device device)
      : BatchFeed(spec, device, device.is_cuda()) {}
  ~BatchFeed();  // waits for the copy stream (its copies write into memory freed here)
  BatchFeed(const BatchFeed&) = delete;
  BatchFeed& operator=(const BatchFeed&) = delete;

  // N samples at RAW (spec.sample_bytes() each) and their label RECORDS. RAW and RECORDS may be
  // reused when it returns (staged); the result is valid until done(). RAW_FENCE (staged only):
  // RAW is in host_buffers(device) memory (pinned on a GPU) and is copied from directly;
  // RAW_FENCE is recorded after that copy, and RAW must not be written before it is done.
  FedBatch feed(const void* raw, int64_t n, const int64_t* records, Fence* raw_fence = nullptr);
  // Every read of the last fed batch has been issued on the current stream.
  void done();
  int64_t host_waits() const;  // feeds that found their pinned slot's copy still in flight
  int64_t direct_feeds() const { return direct_; }  // feeds copied straight out of RAW (RAW_FENCE)

 private:
  io::DatasetSpec spec_;
  torch::Device device_;
  bool held_ = false;
  int64_t direct_ = 0;
  struct Staged;  // the pinned ring, landing blocks, copy stream and events
  std::unique_ptr<Staged> staged_;
};

}  // namespace lockstep
