// Gradient bucket layout: reverse registration order, 1 MiB first bucket, cap after.
#include <gtest/gtest.h>

#include <set>

#include "core/dist/bucket_plan.hpp"

using namespace lockstep;

TEST(BucketPlan, ReverseOrderAndCaps) {
  const size_t mib_floats = 1024 * 1024 / 4;
  // Four parameters of 0.5 MiB each: first bucket (cap 1 MiB) takes the last two.
  const std::vector<size_t> numel(4, mib_floats / 2);
  const auto b = plan_buckets(numel, 4, 25.0);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].params, (std::vector<size_t>{3, 2}));
  EXPECT_EQ(b[0].offsets, (std::vector<size_t>{0, mib_floats / 2}));
  EXPECT_EQ(b[1].params, (std::vector<size_t>{1, 0}));
  EXPECT_EQ(b[1].elems, mib_floats);
}

TEST(BucketPlan, EveryParameterExactlyOnce) {
  std::vector<size_t> numel;
  for (size_t i = 0; i < 50; ++i) numel.push_back(1000 + i * 7919 % 300000);
  for (const double cap : {0.0, 0.1, 1.0, 25.0, 1000.0}) {
    std::set<size_t> seen;
    for (const auto& bucket : plan_buckets(numel, 4, cap)) {
      size_t off = 0;
      for (size_t j = 0; j < bucket.params.size(); ++j) {
        EXPECT_TRUE(seen.insert(bucket.params[j]).second);
        EXPECT_EQ(bucket.offsets[j], off);
        off += numel[bucket.params[j]];
      }
      EXPECT_EQ(off, bucket.elems);
    }
    EXPECT_EQ(seen.size(), numel.size());
  }
}

TEST(BucketPlan, ZeroCapMeansOneBucketPerParameter) {
  EXPECT_EQ(plan_buckets({10, 20, 30}, 4, 0.0).size(), 3u);
}

TEST(BucketPlan, OversizedParameterGetsItsOwnBucket) {
  const size_t big = 30 * 1024 * 1024 / 4;  // 30 MiB
  const auto b = plan_buckets({10, big, 10}, 4, 25.0);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[1].params, (std::vector<size_t>{1}));
}
