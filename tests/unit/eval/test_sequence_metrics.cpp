// core/eval/sequence_metrics: greedy CTC decoding, edit distances, CER/WER counts.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "core/eval/sequence_metrics.hpp"

using namespace lockstep;

TEST(SequenceMetrics, EditDistance) {
  EXPECT_EQ(edit_distance({}, {}), 0);
  EXPECT_EQ(edit_distance({1, 2, 3}, {}), 3);
  EXPECT_EQ(edit_distance({}, {1, 2}), 2);
  EXPECT_EQ(edit_distance({1, 2, 3}, {1, 3}), 1);        // a deletion
  EXPECT_EQ(edit_distance({1, 2, 3}, {1, 4, 3}), 1);     // a substitution
  EXPECT_EQ(edit_distance({1, 2, 3, 4}, {2, 3, 4, 5}), 2);
  // kitten -> sitting: 3
  EXPECT_EQ(edit_distance({'k', 'i', 't', 't', 'e', 'n'}, {'s', 'i', 't', 't', 'i', 'n', 'g'}), 3);
}

TEST(SequenceMetrics, GreedyDecodeCollapsesRepeatsDropsBlanksStopsAtLength) {
  // Classes 0..2, blank 2. Frames' best: 0 0 2 0 1 1 2 | padding 1 1
  const std::vector<int64_t> best{0, 0, 2, 0, 1, 1, 2, 1, 1};
  torch::Tensor logits = torch::zeros({1, 9, 3});
  for (int64_t t = 0; t < 9; ++t) logits[0][t][best[static_cast<size_t>(t)]] = 5.0;
  const auto out = greedy_decode(logits, torch::tensor({7}, torch::kLong), /*blank=*/2);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], (TokenSeq{0, 0, 1}));  // "0 0" merge, the blank separates the next 0
}

TEST(SequenceMetrics, WordsAndRates) {
  EXPECT_EQ(split_words({1, 0, 0, 2, 3, 0}, 0), (std::vector<TokenSeq>{{1}, {2, 3}}));
  EXPECT_EQ(split_words({1, 2}, -1), (std::vector<TokenSeq>{{1, 2}}));
  ErrorCounts e;
  e.add({1, 0, 2, 3}, {1, 0, 2, 4}, 0);  // one char wrong -> one word wrong of two
  EXPECT_DOUBLE_EQ(e.cer(), 0.25);
  EXPECT_DOUBLE_EQ(e.wer(), 0.5);
  e.add({}, {5, 0, 6}, 0);               // nothing recognised: 3 chars, 2 words deleted
  EXPECT_DOUBLE_EQ(e.char_edits, 4);
  EXPECT_DOUBLE_EQ(e.chars, 7);
  EXPECT_DOUBLE_EQ(e.word_edits, 3);
  EXPECT_DOUBLE_EQ(e.words, 4);
}
