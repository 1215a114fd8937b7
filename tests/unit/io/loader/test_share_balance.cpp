// share_balance: a rank's class mix against its split's, for sorted and random shares.
#include <gtest/gtest.h>

#include <vector>

#include "io/loader/sample_order.hpp"
#include "io/loader/share_balance.hpp"

using namespace lockstep::io;

namespace {

// Labels of a split with COUNTS[c] samples of class c, in class order.
std::vector<int64_t> sorted_split(const std::vector<int64_t>& counts) {
  std::vector<int64_t> labels;
  for (size_t c = 0; c < counts.size(); ++c) labels.insert(labels.end(), static_cast<size_t>(counts[c]), static_cast<int64_t>(c));
  return labels;
}

}  // namespace

TEST(ShareBalance, AContiguousSliceOfSortedDataIsUnfairAndNamed) {
  // The case: BasicMotions' 36 training samples, 9 per class, rank 0 of 2.
  const std::vector<int64_t> hist{9, 9, 9, 9};
  const auto split = sorted_split(hist);
  const ShareBalance b = judge_share({split.begin(), split.begin() + 18}, hist);
  EXPECT_FALSE(b.fair());
  EXPECT_EQ(b.worst_class, 2);
  EXPECT_EQ(b.observed, 0);
  EXPECT_DOUBLE_EQ(b.expected, 4.5);
  EXPECT_EQ(share_text(b, 0, {"Standing", "Running", "Walking", "Badminton"}),
            "rank 0 trains on 18 samples with no sample of class 'Walking' (4.5 expected)");
  // Skewed but every class present: found by the chi-square rule.
  const std::vector<int64_t> big{500, 500};
  std::vector<int64_t> skewed(300, 0);
  skewed.insert(skewed.end(), 100, 1);
  const ShareBalance s = judge_share(skewed, big);
  EXPECT_FALSE(s.fair());
  EXPECT_NE(share_text(s, 3, {}).find("rank 3 trains on 400 samples with"), std::string::npos);
}

TEST(ShareBalance, RandomSharesAndTheWholeSplitAreFair) {
  const std::vector<int64_t> hist{9, 9, 9, 9, 300, 7};
  const auto split = sorted_split(hist);
  const auto n = static_cast<int64_t>(split.size());
  int unfair = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const auto perm = epoch_permutation(n, 11, trial, 0);
    for (const int64_t size : {n / 2, n / 4, n / 8}) {
      std::vector<int64_t> share;
      for (int64_t i = 0; i < size; ++i) share.push_back(split[static_cast<size_t>(perm[static_cast<size_t>(i)])]);
      unfair += judge_share(share, hist).fair() ? 0 : 1;
    }
  }
  EXPECT_LE(unfair, 1);  // p = 1e-4 per judgement: 900 judgements
  EXPECT_TRUE(judge_share(split, hist).fair());
  EXPECT_TRUE(judge_share({}, hist).fair());
  EXPECT_EQ(share_text(judge_share(split, hist), 0, {}), "");
}
