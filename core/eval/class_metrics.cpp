// class_metrics: see class_metrics.hpp.
#include "core/eval/class_metrics.hpp"

#include <cmath>
#include <cstdio>

#include "core/base/error.hpp"

namespace lockstep {

ClassMetrics class_metrics(const std::vector<int64_t>& confusion, int64_t classes) {
  LOCKSTEP_REQUIRE(classes > 0 && confusion.size() == static_cast<size_t>(classes * classes),
                   "confusion matrix of " + std::to_string(confusion.size()) + " cells for " +
                       std::to_string(classes) + " classes");
  const auto k = static_cast<size_t>(classes);
  ClassMetrics m;
  m.recall.assign(k, std::nan(""));
  m.precision.assign(k, std::nan(""));
  m.f1.assign(k, std::nan(""));
  std::vector<int64_t> actual(k, 0), predicted(k, 0);
  int64_t correct = 0;
  for (size_t t = 0; t < k; ++t)
    for (size_t p = 0; p < k; ++p) {
      const int64_t n = confusion[t * k + p];
      actual[t] += n;
      predicted[p] += n;
      m.count += n;
      if (t == p) correct += n;
    }
  if (m.count == 0) return m;
  m.accuracy = static_cast<double>(correct) / static_cast<double>(m.count);
  double f1_sum = 0.0;
  int f1_classes = 0;
  for (size_t c = 0; c < k; ++c) {
    const auto tp = static_cast<double>(confusion[c * k + c]);
    if (actual[c] > 0) m.recall[c] = tp / static_cast<double>(actual[c]);
    if (predicted[c] > 0) m.precision[c] = tp / static_cast<double>(predicted[c]);
    if (actual[c] == 0 && predicted[c] == 0) continue;
    // F1 = 2TP / (2TP + FP + FN) = 2TP / (actual + predicted); 0 when TP is 0.
    m.f1[c] = 2.0 * tp / static_cast<double>(actual[c] + predicted[c]);
    f1_sum += m.f1[c];
    ++f1_classes;
  }
  m.macro_f1 = f1_classes > 0 ? f1_sum / f1_classes : 0.0;
  return m;
}

namespace {

std::string cell(const char* format, double v) {
  char buf[32];
  if (std::isnan(v)) return "     -";
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string padded(const std::string& s, size_t width) {
  return s.size() >= width ? s.substr(0, width) : s + std::string(width - s.size(), ' ');
}

}  // namespace

std::string per_class_table(const ClassMetrics& m, const std::vector<int64_t>& confusion,
                            const std::vector<std::string>& names) {
  const size_t k = m.recall.size();
  std::string out = "  class            samples  recall  precision     F1\n";
  for (size_t c = 0; c < k; ++c) {
    int64_t samples = 0;
    for (size_t p = 0; p < k; ++p) samples += confusion[c * k + p];
    const std::string name = std::to_string(c) + (c < names.size() ? " " + names[c] : "");
    char count[24];
    std::snprintf(count, sizeof count, "%8lld", static_cast<long long>(samples));
    out += "  " + padded(name, 15) + count + "  " + cell("%6.4f", m.recall[c]) + "     " +
           cell("%6.4f", m.precision[c]) + "  " + cell("%6.4f", m.f1[c]) + "\n";
  }
  out += "  macro-F1 " + cell("%.4f", m.macro_f1) + ", accuracy " + cell("%.4f", m.accuracy);
  return out;
}

std::string confusion_table(const std::vector<int64_t>& confusion, int64_t classes) {
  const auto k = static_cast<size_t>(classes);
  std::string out = "  true\\pred";
  char buf[24];
  for (size_t p = 0; p < k; ++p) {
    std::snprintf(buf, sizeof buf, "%7zu", p);
    out += buf;
  }
  for (size_t t = 0; t < k; ++t) {
    std::snprintf(buf, sizeof buf, "\n  %9zu", t);
    out += buf;
    for (size_t p = 0; p < k; ++p) {
      std::snprintf(buf, sizeof buf, "%7lld", static_cast<long long>(confusion[t * k + p]));
      out += buf;
    }
  }
  return out;
}

}  // namespace lockstep
