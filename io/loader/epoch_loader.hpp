// epoch_loader: a background thread that keeps up to PREFETCH batches of one epoch ready.
//
// 1. The constructor starts the thread; it fills batches for steps [first_step, steps)
//    from a RankReader in EpochOrder and queues them (bounded: it waits when PREFETCH
//    batches are ready and unconsumed).
// 2. next() hands out the next batch; the previous one returns to the free list. Time
//    spent waiting in next() is the step's data wait, accumulated in wait_seconds().
// 3. A reader error in the thread is rethrown by next() on the training thread.
// 4. The destructor stops and joins the thread, also mid-epoch (a thread waiting for a
//    batch's copy to the device finishes that wait first: work already queued).
// The batches come from a BatchPool: the loader's own (plain memory), or one the caller keeps
// across epochs (EpochLoaders: pinned memory on a GPU, each batch filled again only once the
// copy out of it has completed — batch_pool.hpp).
// Only this thread reads the RankReader while the loader lives (with the read threads the
// reader starts for a window: ReaderOptions::read_threads).
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "io/loader/batch_pool.hpp"
#include "io/loader/rank_reader.hpp"

namespace lockstep::io {

class EpochLoader {
 public:
  // Steps cover positions [step*batch, (step+1)*batch) of ORDER, wrapping; with
  // PARTIAL_LAST the final step stops at the end of ORDER instead (evaluation). POOL: the
  // batches to fill (max(1, PREFETCH) + 1 of at least BATCH samples; it outlives the loader),
  // else the loader's own in plain memory.
  EpochLoader(const RankReader& reader, EpochOrder order, int64_t batch, int64_t steps, int64_t first_step,
              int prefetch, bool partial_last = false, BatchPool* pool = nullptr);
  ~EpochLoader();
  EpochLoader(const EpochLoader&) = delete;
  EpochLoader& operator=(const EpochLoader&) = delete;

  // The batches a loader with PREFETCH keeps: the prefetched ones and the one lent out.
  static size_t pool_size(int prefetch) { return static_cast<size_t>(std::max(1, prefetch) + 1); }

  const Batch* next();  // nullptr after the last step
  double wait_seconds() const { return wait_s_; }
  // Batches the thread found still being copied to the device when it came to fill them.
  int64_t reuse_waits() const;

 private:
  void run();

  const RankReader& reader_;
  const EpochOrder order_;
  const int64_t batch_, steps_, first_step_;
  const bool partial_last_;
  std::unique_ptr<BatchPool> own_pool_;  // when no pool was given
  BatchPool& pool_;
  std::deque<Batch*> ready_, free_;
  Batch* lent_ = nullptr;
  int64_t handed_ = 0;
  bool stop_ = false, done_ = false;
  std::exception_ptr error_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  double wait_s_ = 0.0;
  int64_t reuse_waits_ = 0;
  std::thread thread_;
};

// One pass over READER's samples in their order (evaluation, prediction), the last batch
// partial: batches of BATCH, or of all the samples when fewer. Its buffers are sized by the
// batch: --batch-size 2000000000 on 200 samples allocated for 2e9 and ended in std::bad_alloc
// (a hostile finding).
std::unique_ptr<EpochLoader> one_pass(const RankReader& reader, int64_t batch, int prefetch);

}  // namespace lockstep::io
