// epoch_loader: see epoch_loader.hpp.
#include "io/loader/epoch_loader.hpp"

#include <chrono>

#include "core/base/error.hpp"

namespace lockstep::io {

EpochLoader::EpochLoader(const RankReader& reader, EpochOrder order, int64_t batch, int64_t steps,
                         int64_t first_step, int prefetch, bool partial_last, BatchPool* pool)
    : reader_(reader), order_(std::move(order)), batch_(batch), steps_(steps), first_step_(first_step),
      partial_last_(partial_last),
      own_pool_(pool ? nullptr : std::make_unique<BatchPool>(reader.spec(), batch, pool_size(prefetch))),
      pool_(pool ? *pool : *own_pool_) {
  LOCKSTEP_REQUIRE(batch >= 1 && batch <= pool_.batch(),
                   "loader: batch size " + std::to_string(batch) + " does not fit the pool's " + std::to_string(pool_.batch()));
  LOCKSTEP_REQUIRE(pool_.count() == pool_size(prefetch), "loader: prefetch " + std::to_string(prefetch) + " needs " +
                                                            std::to_string(pool_size(prefetch)) + " batches, the pool has " +
                                                            std::to_string(pool_.count()));
  pool_.take();
  // Batches whose copies have completed first: the thread fills those without a wait.
  for (size_t i = 0; i < pool_.count(); ++i) {
    Batch* b = &pool_.at(i);
    if (b->reuse && !b->reuse->done())
      free_.push_back(b);
    else
      free_.push_front(b);
  }
  try {
    thread_ = std::thread(&EpochLoader::run, this);
  } catch (...) {
    pool_.give_back();
    throw;
  }
}

EpochLoader::~EpochLoader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  pool_.give_back();
}

void EpochLoader::run() {
  StreamCache cache;
  const int64_t total = static_cast<int64_t>(order_.ids.size());
  try {
    for (int64_t step = first_step_; step < steps_; ++step) {
      Batch* b = nullptr;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !free_.empty(); });
        if (stop_) return;
        b = free_.front();
        free_.pop_front();
      }
      if (BatchPool::wait_for_reuse(*b)) {  // its copy to the device is still in flight
        std::lock_guard<std::mutex> lock(mu_);
        ++reuse_waits_;
      }
      const int64_t pos = step * batch_;
      b->step = step;
      b->size = partial_last_ ? std::min(batch_, total - pos) : batch_;
      reader_.fill(order_, pos, b->size, b->samples, b->labels.data(), cache);
      {
        std::lock_guard<std::mutex> lock(mu_);
        ready_.push_back(b);
      }
      cv_.notify_all();
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
}

int64_t EpochLoader::reuse_waits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reuse_waits_;
}

const Batch* EpochLoader::next() {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  if (lent_) {
    free_.push_back(lent_);
    lent_ = nullptr;
    cv_.notify_all();
  }
  cv_.wait(lock, [&] { return !ready_.empty() || done_; });
  wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (ready_.empty()) {
    if (error_) std::rethrow_exception(error_);
    return nullptr;
  }
  lent_ = ready_.front();
  ready_.pop_front();
  ++handed_;
  return lent_;
}

std::unique_ptr<EpochLoader> one_pass(const RankReader& reader, int64_t batch, int prefetch) {
  const int64_t n = reader.size();
  batch = batch < n ? batch : std::max<int64_t>(1, n);
  return std::make_unique<EpochLoader>(reader, reader.order(/*shuffle=*/false, 0, 0), batch, (n + batch - 1) / batch, 0,
                                       prefetch, /*partial_last=*/true);
}

}  // namespace lockstep::io
