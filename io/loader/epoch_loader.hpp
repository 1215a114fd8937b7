// epoch_loader: a background thread that keeps up to PREFETCH batches of one epoch ready.
//
// 1. The constructor starts the thread; it fills batches for steps [first_step, steps)
//    from a RankReader in EpochOrder and queues them (bounded: it waits when PREFETCH
//    batches are ready and unconsumed).
// 2. next() hands out the next batch; the previous one returns to the free list. Time
//    spent waiting in next() is the step's data wait, accumulated in wait_seconds().
// 3. A reader error in the thread is rethrown by next() on the training thread.
// 4. The destructor stops and joins the thread, also mid-epoch.
// Only this thread reads the RankReader while the loader lives (with the read threads the
// reader starts for a window: ReaderOptions::read_threads).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "io/loader/rank_reader.hpp"

namespace lockstep::io {

struct Batch {
  std::vector<unsigned char> samples;
  std::vector<int64_t> labels;  // label records, spec.record_width() per sample
  int64_t step = 0;
  int64_t size = 0;  // samples in this batch (the last evaluation batch may be short)
};

class EpochLoader {
 public:
  // Steps cover positions [step*batch, (step+1)*batch) of ORDER, wrapping; with
  // PARTIAL_LAST the final step stops at the end of ORDER instead (evaluation).
  EpochLoader(const RankReader& reader, EpochOrder order, int64_t batch, int64_t steps, int64_t first_step,
              int prefetch, bool partial_last = false);
  ~EpochLoader();
  EpochLoader(const EpochLoader&) = delete;
  EpochLoader& operator=(const EpochLoader&) = delete;

  const Batch* next();  // nullptr after the last step
  double wait_seconds() const { return wait_s_; }

 private:
  void run();

  const RankReader& reader_;
  const EpochOrder order_;
  const int64_t batch_, steps_, first_step_;
  const bool partial_last_;
  std::vector<Batch> pool_;
  std::deque<Batch*> ready_, free_;
  Batch* lent_ = nullptr;
  int64_t handed_ = 0;
  bool stop_ = false, done_ = false;
  std::exception_ptr error_;
  std::mutex mu_;
  std::condition_variable cv_;
  double wait_s_ = 0.0;
  std::thread thread_;
};

}  // namespace lockstep::io
