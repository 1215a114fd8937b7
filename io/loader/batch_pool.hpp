// batch_pool: the batches a loader fills and lends, kept from one epoch's loader to the next.
//
// Given HostBuffers (core/base/fence.hpp), a batch's samples live in their memory — pinned on
// a GPU, so the training step copies a batch to the device straight out of the loader's
// buffer (BatchFeed) instead of first copying it, on the training thread, into a pinned slot
// — with a fence per batch: the consumer records Batch::reuse after issuing the copy, and the
// loader's thread (never the training thread) waits for it before it fills that batch again.
// Without HostBuffers: plain memory and no fence (the consumer is done reading a batch when it
// asks for the next one: evaluation, prediction).
// The pool outlives the loaders that borrow it (EpochLoaders owns one for the run), so a copy
// still in flight when an epoch's loader goes away is waited for by the next loader's thread;
// the pool's destructor waits for the ones still in flight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/base/fence.hpp"
#include "io/dataset/shard_format.hpp"

namespace lockstep::io {

struct Batch {
  unsigned char* samples = nullptr;  // room for the pool's batch size, spec.sample_bytes() each
  std::vector<int64_t> labels;       // label records, spec.record_width() per sample
  int64_t step = 0;
  int64_t size = 0;         // samples in this batch (the last evaluation batch may be short)
  Fence* reuse = nullptr;   // HostBuffers memory only: recorded after a copy out of SAMPLES
};

class BatchPool {
 public:
  // COUNT batches of BATCH samples of SPEC, in BUFFERS' memory (null: plain memory).
  BatchPool(const DatasetSpec& spec, int64_t batch, size_t count, const HostBuffers* buffers = nullptr);
  ~BatchPool();  // waits for copies still reading a batch (their memory is freed here)
  BatchPool(const BatchPool&) = delete;
  BatchPool& operator=(const BatchPool&) = delete;

  size_t count() const { return batches_.size(); }
  int64_t batch() const { return batch_; }
  Batch& at(size_t i) { return batches_.at(i); }
  // Before B is written again: false at once when no copy out of it is in flight, else waits
  // for that copy and returns true.
  static bool wait_for_reuse(Batch& b);
  // One loader fills the pool at a time: EpochLoader takes it for its life.
  void take();
  void give_back() { taken_ = false; }

 private:
  const int64_t batch_;
  bool taken_ = false;
  std::vector<Batch> batches_;
  std::vector<std::shared_ptr<void>> memory_;  // one per batch
  std::vector<std::unique_ptr<Fence>> fences_;   // one per batch (HostBuffers only)
};

}  // namespace lockstep::io
