// sequence_metrics: what a CTC model is scored by. Greedy decoding (best class per frame,
// repeats collapsed, blanks dropped) and the error counts behind CER and WER: edit
// (Levenshtein) distances and reference lengths, in characters (tokens) and in words
// (token runs between the space token). Counts are sums, so ranks all-reduce them and
// the rates equal a 1-rank evaluation's.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace lockstep {

using TokenSeq = std::vector<int64_t>;

// LOGITS [N, T, C] (any float type, any device), OUT_LENGTHS [N] valid frames.
std::vector<TokenSeq> greedy_decode(const torch::Tensor& logits, const torch::Tensor& out_lengths, int64_t blank);

// Insertions + deletions + substitutions turning A into B.
int64_t edit_distance(const TokenSeq& a, const TokenSeq& b);

// Token runs between SPACE tokens (empty runs dropped); SPACE < 0: the whole sequence.
std::vector<TokenSeq> split_words(const TokenSeq& tokens, int64_t space);

struct ErrorCounts {
  double char_edits = 0, chars = 0, word_edits = 0, words = 0;
  void add(const TokenSeq& hypothesis, const TokenSeq& reference, int64_t space);
  double cer() const { return chars > 0 ? char_edits / chars : 0.0; }
  double wer() const { return words > 0 ? word_edits / words : 0.0; }
};

}  // namespace lockstep
