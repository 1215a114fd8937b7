// share_balance: whether the samples a rank trains on in an epoch have its split's class
// mix. A pure function of the share's labels and the split's histogram (from the
// manifest), tested in one process; the trainer runs it on every rank at start-up
// (core/data/share_check.hpp) and warns about any rank it finds biased.
//
// A share of n samples drawn at random from a split of N has, for class c of split
// frequency p_c, about e_c = n p_c samples. The share is judged unfair when
// 1. a class with e_c >= 10 has no sample in it (chance: under 5e-5), or
// 2. Pearson's statistic sum (o_c - e_c)^2 / e_c, divided by the finite-population
//    factor (N - n) / (N - 1) of drawing without replacement, exceeds the chi-square
//    quantile of p = 1e-4 (Wilson-Hilferty), over the classes with e_c > 0.
// A random share is judged unfair about once in 10,000 starts; a share cut from
// class-sorted data at once. The class named is an absent one (the most expected) if
// any, else the one with the largest |o - e| / sqrt(e).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::io {

struct ShareBalance {
  int64_t samples = 0;       // in the share
  int64_t worst_class = -1;  // -1: the share is fair
  int64_t observed = 0;      // of the worst class
  double expected = 0.0;
  bool fair() const { return worst_class < 0; }
};

ShareBalance judge_share(const std::vector<int64_t>& share_labels, const std::vector<int64_t>& split_histogram);

// "rank 1 trains on 18 samples with no sample of class 'Walking' (4.5 expected)" or
// "... 0 of class 'Walking' where 4.5 are expected"; empty when fair.
std::string share_text(const ShareBalance& b, int rank, const std::vector<std::string>& class_names);

}  // namespace lockstep::io
