// Every rank's breakdown at log rows: the gather, min/median/max, and the straggler rule
// (a streak of windows, a threshold, one warning per streak).
#include <gtest/gtest.h>

#include "core/train/rank_spread.hpp"

using namespace lockstep;

namespace {

// A spread of WORLD ranks whose busy times are BUSY (ms/step), exposed comm the rest of 100.
RankSpread spread(const std::vector<double>& busy) {
  RankSpread s;
  for (const double b : busy) {
    std::array<double, kRankPhases> ms{};
    ms[kRankForward] = b / 2;
    ms[kRankBackward] = b / 2;
    ms[kRankComm] = 100 - b;
    ms[kRankBusy] = b;
    s.ms.push_back(ms);
  }
  return s;
}

}  // namespace

TEST(RankSpread, GatherPutsEachRankInItsSlotAsMsPerStep) {
  // Two "ranks" in one process: the sum is the element-wise sum of both contributions.
  std::vector<double> other(2 * kRankPhases, 0.0);
  Times t1;
  t1.seconds = 1.0, t1.forward = 0.4, t1.backward = 0.3, t1.exposed_comm = 0.2, t1.data_wait = 0.05, t1.optimizer = 0.05;
  const AllreduceSum fake = [&](double* v, int n) {
    Times t0;
    t0.seconds = 0.5, t0.forward = 0.25, t0.backward = 0.25;
    other[kRankForward] = t0.forward * 100, other[kRankBackward] = t0.backward * 100, other[kRankBusy] = 50;
    for (int i = 0; i < n; ++i) v[i] += other[static_cast<size_t>(i)];
  };
  const RankSpread s = gather_rank_times(t1, 10, 1, 2, fake);
  ASSERT_EQ(s.world(), 2);
  EXPECT_DOUBLE_EQ(s.ms[1][kRankForward], 40.0);
  EXPECT_DOUBLE_EQ(s.ms[1][kRankComm], 20.0);
  EXPECT_DOUBLE_EQ(s.ms[1][kRankBusy], 80.0);
  EXPECT_DOUBLE_EQ(s.ms[0][kRankBusy], 50.0);
  EXPECT_EQ(s.slowest(), 1);
}

TEST(RankSpread, MinMedianMaxOverRanks) {
  const PhaseSpread p = spread({30, 10, 50, 20}).phase(kRankBusy);
  EXPECT_EQ(p.min, 10);
  EXPECT_EQ(p.median, 25);
  EXPECT_EQ(p.max, 50);
  EXPECT_EQ(p.min_rank, 1);
  EXPECT_EQ(p.max_rank, 2);
  EXPECT_EQ(spread({30, 10, 50}).phase(kRankBusy).median, 30);
}

TEST(StragglerWatch, WarnsOnceAfterAStreakNamingRankAndHost) {
  StragglerWatch w(3, 20);
  const std::vector<std::string> hosts{"n1", "n2", "n3"};
  EXPECT_FALSE(w.update(spread({40, 41, 80}), hosts));
  EXPECT_FALSE(w.update(spread({40, 41, 80}), hosts));
  const auto warning = w.update(spread({40, 41, 80}), hosts);
  ASSERT_TRUE(warning);
  EXPECT_NE(warning->find("straggler: rank 2 (n3) has been the slowest rank for 3 log windows"), std::string::npos) << *warning;
  EXPECT_FALSE(w.update(spread({40, 41, 80}), hosts));  // once per streak
  EXPECT_FALSE(w.update(spread({40, 41, 42}), hosts));  // streak broken: within 20%
  EXPECT_FALSE(w.update(spread({40, 41, 80}), hosts));
  EXPECT_FALSE(w.update(spread({90, 41, 42}), hosts));  // another rank: a new streak
}

TEST(StragglerWatch, OffAtOneRankOrZeroWindows) {
  StragglerWatch off(0, 20);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(off.update(spread({10, 90}), {"a", "b"}));
  StragglerWatch one(1, 20);
  EXPECT_FALSE(one.update(spread({90}), {"a"}));
  EXPECT_TRUE(one.update(spread({10, 90}), {"a", "b"}));
}
