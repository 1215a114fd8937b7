// Shard assignment and epoch order: pure functions, checked for many simulated ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "core/base/error.hpp"
#include "io/loader/sample_order.hpp"
#include "io/loader/shard_plan.hpp"

using namespace lockstep;
using namespace lockstep::io;

namespace {

// Every sample of the split is read by exactly one rank.
void expect_partition(const std::vector<int64_t>& counts, int world) {
  std::vector<std::vector<int>> seen(counts.size());
  for (size_t s = 0; s < counts.size(); ++s) seen[s].assign(static_cast<size_t>(counts[s]), 0);
  for (int r = 0; r < world; ++r)
    for (const auto& range : plan_rank_ranges(counts, r, world))
      for (int64_t i = range.begin; i < range.end; ++i) ++seen[range.shard][i];
  for (const auto& shard : seen)
    for (const int c : shard) ASSERT_EQ(c, 1);
}

}  // namespace

TEST(ShardPlan, WholeShardsRoundRobinWhenShardsAtLeastRanks) {
  const std::vector<int64_t> counts{10, 10, 10, 10, 9};
  const auto r0 = plan_rank_ranges(counts, 0, 2);
  ASSERT_EQ(r0.size(), 3u);
  EXPECT_EQ(r0[0], (SampleRange{0, 0, 10}));
  EXPECT_EQ(r0[1], (SampleRange{2, 0, 10}));
  EXPECT_EQ(r0[2], (SampleRange{4, 0, 9}));
  const auto r1 = plan_rank_ranges(counts, 1, 2);
  ASSERT_EQ(r1.size(), 2u);
  EXPECT_EQ(r1[0], (SampleRange{1, 0, 10}));
}

TEST(ShardPlan, RanksShareShardsByDisjointRangesWhenFewerShards) {
  const std::vector<int64_t> counts{7, 5};
  EXPECT_EQ(plan_rank_ranges(counts, 0, 3), (std::vector<SampleRange>{{0, 0, 4}}));
  EXPECT_EQ(plan_rank_ranges(counts, 1, 3), (std::vector<SampleRange>{{0, 4, 7}, {1, 0, 1}}));
  EXPECT_EQ(plan_rank_ranges(counts, 2, 3), (std::vector<SampleRange>{{1, 1, 5}}));
}

TEST(ShardPlan, EverySampleReadOnceForManyWorldSizes) {
  const std::vector<std::vector<int64_t>> layouts{{100}, {33, 33, 34}, {5, 1, 7, 9, 2, 8, 8, 8}, {1000, 3}};
  for (const auto& counts : layouts)
    for (int world = 1; world <= 17; ++world) expect_partition(counts, world);
}

TEST(ShardPlan, StepsPerEpochIsTheMinimumOverRanks) {
  // Round-robin: rank 0 gets 10+10+9=29, rank 1 gets 20: with batch 4 -> min(7, 5) = 5.
  EXPECT_EQ(steps_per_epoch({10, 10, 10, 10, 9}, 2, 4), 5);
  EXPECT_EQ(steps_per_epoch({100}, 1, 32), 3);
  EXPECT_EQ(steps_per_epoch({100}, 4, 25), 1);
}

TEST(ShardPlan, MoreRanksThanDataIsAnErrorNamingTheRank) {
  try {
    steps_per_epoch({3}, 4, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 of 4 gets 0 samples"), std::string::npos) << e.what();
  }
  EXPECT_THROW(steps_per_epoch({10, 10}, 2, 11), Error);
}

TEST(SampleOrder, PermutationIsDeterministicAndComplete) {
  const auto a = epoch_permutation(1000, 7, 3, 1);
  const auto b = epoch_permutation(1000, 7, 3, 1);
  EXPECT_EQ(a, b);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i);
}

TEST(SampleOrder, DiffersByEpochRankAndSeed) {
  const auto base = epoch_permutation(500, 7, 0, 0);
  EXPECT_NE(base, epoch_permutation(500, 7, 1, 0));
  EXPECT_NE(base, epoch_permutation(500, 7, 0, 1));
  EXPECT_NE(base, epoch_permutation(500, 8, 0, 0));
}

TEST(SampleOrder, KnownValuesPinTheAlgorithm) {
  // Pinned so a change of generator (which would change every resumed run's data order)
  // cannot slip in unnoticed.
  EXPECT_EQ(epoch_permutation(8, 42, 0, 0), epoch_permutation(8, 42, 0, 0));
  uint64_t s = 0;
  EXPECT_EQ(splitmix64(s), 0xE220A8397B1DCDAFull);
}

// Rule 5: the per-epoch deal, for many simulated ranks, shard layouts, units and epochs.
TEST(ShardDeal, EveryEpochPartitionsTheSplitIntoEqualShares) {
  const std::vector<std::vector<int64_t>> layouts{{100}, {37, 41, 3}, {10, 10, 10, 10, 9}, {1, 0, 5}};
  for (const auto& counts : layouts) {
    const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
    for (int world = 1; world <= 9; ++world)
      for (const int64_t unit : {1, 4, 50})
        for (int64_t epoch = 0; epoch < 3; ++epoch) {
          std::vector<std::vector<int>> seen(counts.size());
          for (size_t s = 0; s < counts.size(); ++s) seen[s].assign(static_cast<size_t>(counts[s]), 0);
          int64_t dealt = 0;
          for (int r = 0; r < world; ++r) {
            const auto ranges = deal_rank_ranges(counts, unit, 7, epoch, r, world);
            EXPECT_EQ(ranges, deal_rank_ranges(counts, unit, 7, epoch, r, world));  // pure
            int64_t n = 0;
            for (const auto& range : ranges) {
              ASSERT_TRUE(range.begin >= 0 && range.begin < range.end && range.end <= counts[range.shard]);
              ASSERT_LE(range.size(), unit);
              for (int64_t i = range.begin; i < range.end; ++i) ++seen[range.shard][i];
              n += range.size();
            }
            EXPECT_EQ(n, dealt_sample_count(counts, r, world));
            EXPECT_LE(n, total / world + 1);
            EXPECT_GE(n, total / world);
            dealt += n;
          }
          EXPECT_EQ(dealt, total);
          for (const auto& shard : seen)
            for (const int c : shard) ASSERT_EQ(c, 1) << "world " << world << " unit " << unit;
        }
  }
}

TEST(ShardDeal, ARankGetsAnotherShareEachEpochAndSeedsDiffer) {
  const std::vector<int64_t> counts{1000};  // one shard, fewer shards than ranks
  const auto share = [&](int64_t unit, uint64_t seed, int64_t epoch, int rank) {
    std::set<int64_t> ids;
    for (const auto& r : deal_rank_ranges(counts, unit, seed, epoch, rank, 4))
      for (int64_t i = r.begin; i < r.end; ++i) ids.insert(i);
    return ids;
  };
  for (const int64_t unit : {1, 25}) {
    EXPECT_NE(share(unit, 1, 0, 2), share(unit, 1, 1, 2));
    EXPECT_NE(share(unit, 1, 0, 2), share(unit, 2, 0, 2));
  }
  // Unit 1 mixes the whole split: rank 0's share is not the first quarter of it.
  const auto first = share(1, 1, 0, 0);
  EXPECT_LT(std::count_if(first.begin(), first.end(), [](int64_t i) { return i < 250; }), 100);
}

TEST(ShardDeal, StepsPerEpochOfEqualShares) {
  // 49 samples over 2 ranks: 24 and 25, batch 4 -> 6 steps (whole shards gave 29 and 20: 5).
  EXPECT_EQ(steps_per_epoch({10, 10, 10, 10, 9}, 2, 4, false, /*dealt=*/true), 6);
  EXPECT_EQ(steps_per_epoch({10, 10, 10, 10, 9}, 2, 4, /*wrap=*/true, /*dealt=*/true), 7);
  EXPECT_THROW(steps_per_epoch({3}, 4, 1, false, true), Error);
}

// Fixed shares (a reader that keeps each rank's share) of unequal size: said, with what an
// epoch loses (drop) or repeats (wrap); equal ones (within a batch) say nothing.
TEST(ShardPlan, UnequalFixedSharesAreSaidWithWhatAnEpochLoses) {
  // 5 shards of 180 on 4 ranks: rank 0 owns 2 (360), the others 180 each; batch 8.
  const std::vector<int64_t> five(5, 180);
  EXPECT_EQ(fixed_share_note(five, 4, 8, false),
            "each epoch trains 704 of the split's 900 samples (22% left out: the ranks' shares are 180 to 360 "
            "samples, and every rank trains the smallest share's step count)");
  EXPECT_EQ(fixed_share_note(five, 4, 8, true),
            "the ranks' shares are 180 to 360 samples, so with --data.remainder wrap each epoch repeats the smallest "
            "share up to 2.0 times");
  EXPECT_EQ(fixed_share_note(std::vector<int64_t>(4, 180), 4, 8, false), "");
  EXPECT_EQ(fixed_share_note({181, 180}, 2, 8, false), "");  // within a batch: the ordinary remainder
  EXPECT_EQ(fixed_share_note(five, 1, 8, false), "");
}
