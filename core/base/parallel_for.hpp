// parallel_for: F(i) for every i in [0, N) on up to THREADS threads — the caller's among them —
// each taking the next index as it finishes one; returns when all are done. The exception
// of the lowest index that threw is rethrown, so the error is the same whatever the timing;
// indices above a failed one may be skipped.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace lockstep {

template <typename F>
void parallel_for(int64_t n, int threads, const F& f) {
  const int t = static_cast<int>(std::min<int64_t>(std::max(threads, 1), n));
  if (t <= 1) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> failed_at{n};
  std::exception_ptr failure;
  std::mutex mu;
  const auto work = [&] {
    for (int64_t i; (i = next.fetch_add(1)) < n;) {
      if (i > failed_at.load()) continue;
      try {
        f(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (i < failed_at.load()) {
          failed_at = i;
          failure = std::current_exception();
        }
      }
    }
  };
  std::vector<std::thread> pool;
  try {
    for (int k = 1; k < t; ++k) pool.emplace_back(work);
  } catch (...) {  // no more threads to be had: fewer do the work (the started ones are joined)
  }
  work();
  for (std::thread& th : pool) th.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace lockstep
