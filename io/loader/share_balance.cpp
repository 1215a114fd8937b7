// share_balance: see share_balance.hpp.
#include "io/loader/share_balance.hpp"

#include <cmath>
#include <cstdio>

namespace lockstep::io {

namespace {

// Upper 1e-4 quantile of chi-square with DF degrees of freedom (Wilson-Hilferty: accurate
// to a few percent from DF = 1 up, which is all a warning threshold needs).
double chi2_quantile_1e4(int64_t df) {
  const double k = static_cast<double>(df), z = 3.719;  // standard normal 1 - 1e-4
  const double a = 2.0 / (9.0 * k);
  return k * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

std::string fmt_g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

ShareBalance judge_share(const std::vector<int64_t>& share_labels, const std::vector<int64_t>& split_histogram) {
  ShareBalance b;
  b.samples = static_cast<int64_t>(share_labels.size());
  int64_t total = 0;
  for (const int64_t c : split_histogram) total += c;
  if (b.samples == 0 || total <= 1 || b.samples >= total) return b;  // the whole split is fair by definition
  std::vector<int64_t> observed(split_histogram.size(), 0);
  for (const int64_t l : share_labels)
    if (l >= 0 && l < static_cast<int64_t>(observed.size())) ++observed[static_cast<size_t>(l)];
  const double n = static_cast<double>(b.samples), big_n = static_cast<double>(total);
  const double fpc = (big_n - n) / (big_n - 1.0);
  double stat = 0.0, worst = -1.0;
  int64_t df = -1, worst_class = -1;
  bool absent_trigger = false, worst_absent = false;
  for (size_t c = 0; c < split_histogram.size(); ++c) {
    const double e = n * static_cast<double>(split_histogram[c]) / big_n;
    if (e <= 0) continue;
    ++df;
    const double o = static_cast<double>(observed[c]);
    stat += (o - e) * (o - e) / e;
    absent_trigger = absent_trigger || (e >= 10.0 && observed[c] == 0);
    // The class to name: an absent one (the most expected) before any other deviation.
    const bool absent = e >= 1.0 && observed[c] == 0;
    const double dev = std::fabs(o - e) / std::sqrt(e);
    if ((absent && !worst_absent) || (absent == worst_absent && dev > worst)) {
      worst = dev;
      worst_class = static_cast<int64_t>(c);
      worst_absent = absent;
    }
  }
  if (df < 1) return b;
  if (!absent_trigger && stat / fpc <= chi2_quantile_1e4(df)) return b;
  b.worst_class = worst_class;
  b.observed = observed[static_cast<size_t>(worst_class)];
  b.expected = n * static_cast<double>(split_histogram[static_cast<size_t>(worst_class)]) / big_n;
  return b;
}

std::string share_text(const ShareBalance& b, int rank, const std::vector<std::string>& class_names) {
  if (b.fair()) return "";
  const auto c = static_cast<size_t>(b.worst_class);
  const std::string name = c < class_names.size() ? "'" + class_names[c] + "'" : std::to_string(b.worst_class);
  std::string text = "rank " + std::to_string(rank) + " trains on " + std::to_string(b.samples) + " samples with ";
  if (b.observed == 0) return text + "no sample of class " + name + " (" + fmt_g(b.expected) + " expected)";
  return text + std::to_string(b.observed) + " of class " + name + " where " + fmt_g(b.expected) +
         " are expected (its class mix is far from the split's)";
}

}  // namespace lockstep::io
