// series: repeated measurements of one figure and how the benchmarks report them —
// median and min-max (never a mean: one slow run on a shared machine is noise).
#pragma once

#include <algorithm>
#include <vector>

namespace lockstep::bench {

struct Series {
  std::vector<double> v;
  double median() const {
    std::vector<double> s = v;
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  }
  double lo() const { return *std::min_element(v.begin(), v.end()); }
  double hi() const { return *std::max_element(v.begin(), v.end()); }
};

}  // namespace lockstep::bench
