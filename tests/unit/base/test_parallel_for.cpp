// core/base/parallel_for: every index runs once on up to the threads asked for; the error of the
// lowest index that threw is the one rethrown, whatever the timing; one thread runs in order.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/base/parallel_for.hpp"

using lockstep::parallel_for;

TEST(ParallelFor, RunsEveryIndexOnce) {
  for (const int threads : {1, 2, 7, 64}) {
    std::vector<std::atomic<int>> hits(100);
    for (auto& h : hits) h = 0;
    parallel_for(100, threads, [&](int64_t i) { hits[static_cast<size_t>(i)]++; });
    for (const auto& h : hits) EXPECT_EQ(h.load(), 1) << threads;
  }
  parallel_for(0, 4, [](int64_t) { FAIL() << "no index to run"; });
}

TEST(ParallelFor, RethrowsTheLowestFailedIndexesError) {
  for (int rep = 0; rep < 20; ++rep) {
    try {
      parallel_for(50, 4, [](int64_t i) {
        if (i == 13 || i == 31 || i == 47) throw std::runtime_error("index " + std::to_string(i));
      });
      FAIL() << "expected an error";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "index 13");
    }
  }
}

TEST(ParallelFor, OneThreadRunsInOrder) {
  std::vector<int64_t> seen;
  parallel_for(5, 1, [&](int64_t i) { seen.push_back(i); });
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3, 4}));
}
