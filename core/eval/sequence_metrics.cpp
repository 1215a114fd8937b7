// sequence_metrics: see sequence_metrics.hpp.
#include "core/eval/sequence_metrics.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <map>

namespace lockstep {

std::vector<TokenSeq> greedy_decode(const torch::Tensor& logits, const torch::Tensor& out_lengths, int64_t blank) {
  const torch::Tensor best = logits.argmax(-1).to(torch::kCPU, torch::kLong).contiguous();  // [N, T]
  const torch::Tensor len = out_lengths.to(torch::kCPU, torch::kLong).contiguous();
  const int64_t n = best.size(0), t = best.size(1);
  std::vector<TokenSeq> out(static_cast<size_t>(n));
  const int64_t* b = best.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t frames = std::min(t, len[i].item<int64_t>());
    int64_t prev = -1;
    for (int64_t f = 0; f < frames; ++f) {
      const int64_t c = b[i * t + f];
      if (c != prev && c != blank) out[static_cast<size_t>(i)].push_back(c);
      prev = c;
    }
  }
  return out;
}

int64_t edit_distance(const TokenSeq& a, const TokenSeq& b) {
  std::vector<int64_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int64_t>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int64_t diag = row[0];
    row[0] = static_cast<int64_t>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int64_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::vector<TokenSeq> split_words(const TokenSeq& tokens, int64_t space) {
  std::vector<TokenSeq> words(1);
  for (const int64_t t : tokens) {
    if (space >= 0 && t == space) {
      if (!words.back().empty()) words.emplace_back();
    } else {
      words.back().push_back(t);
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

void ErrorCounts::add(const TokenSeq& hypothesis, const TokenSeq& reference, int64_t space) {
  char_edits += static_cast<double>(edit_distance(hypothesis, reference));
  chars += static_cast<double>(reference.size());
  // Words compared as symbols: each distinct word gets an id.
  std::map<TokenSeq, int64_t> ids;
  const auto as_ids = [&](const TokenSeq& s) {
    TokenSeq out;
    for (const TokenSeq& w : split_words(s, space)) out.push_back(ids.emplace(w, static_cast<int64_t>(ids.size())).first->second);
    return out;
  };
  const TokenSeq h = as_ids(hypothesis), r = as_ids(reference);
  word_edits += static_cast<double>(edit_distance(h, r));
  words += static_cast<double>(r.size());
}

}  // namespace lockstep
