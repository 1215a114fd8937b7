// epoch_loaders: the training split's loader of each epoch, the next one started early.
//
// An epoch ends with work that reads no training data — validation, the epoch's row, the
// best and step checkpoints — and the next epoch's loader used to start after it, so every
// epoch's first steps waited for batches the loader had only begun to read (on a GPU the
// device idles meanwhile: part of the ~0.34 s per epoch end ResNet-18 left an H100 idle,
// 2026-11-27). start(E) opens epoch E's loader once the epoch before has taken its last
// batch, so its thread reads while the epoch ends; open(E, FIRST) then hands that loader
// out. Epoch orders are pure in (seed, epoch), so a loader started early serves the batches
// a late one would. One loader at a time reads the RankReader (EpochLoader's rule): each
// open or start releases the loader before it. Every loader fills the same BatchPool: with
// HostBuffers (a GPU: pinned memory), the step copies a batch straight out of it, and a copy
// still in flight at an epoch's end is waited for by the next loader's thread.
#pragma once

#include <cstdint>
#include <memory>

#include "io/loader/epoch_loader.hpp"

namespace lockstep::io {

class EpochLoaders {
 public:
  // STEPS loader steps per epoch of BATCH samples, in READER's shuffled order for SEED; the
  // batches in BUFFERS' memory (null: plain memory).
  EpochLoaders(const RankReader& reader, uint64_t seed, int64_t batch, int64_t steps, int prefetch,
               const HostBuffers* buffers = nullptr);

  // Epoch EPOCH's loader from step FIRST: the one start() opened when it matches and nobody
  // took it yet, else a new one. Valid until the next open(), start() or release().
  EpochLoader& open(int64_t epoch, int64_t first);
  // Epoch EPOCH's loader from its first step, reading from now on (returned for tests: the
  // caller takes it with open()).
  const EpochLoader& start(int64_t epoch);
  // No loader (a run that stops: a started one stops reading).
  void release();

 private:
  void make(int64_t epoch, int64_t first);

  const RankReader& reader_;
  const uint64_t seed_;
  const int64_t batch_, steps_;
  const int prefetch_;
  BatchPool pool_;                        // declared before loader_: outlives every loader
  std::unique_ptr<EpochLoader> loader_;
  int64_t epoch_ = -1, first_ = -1;  // what loader_ serves
  bool fresh_ = false;               // started, not yet handed out
};

}  // namespace lockstep::io
