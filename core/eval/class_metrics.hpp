// class_metrics: classification metrics from a confusion matrix (rows: true class,
// columns: predicted class). Pure; the evaluator fills the matrix, summed over ranks.
//
// Macro-F1 averages F1 over the classes that occur in the data or the predictions (a
// class with neither has no defined F1 and is left out, as scikit-learn does for labels
// absent from both). Recall of a class with no samples is reported as NaN.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lockstep {

struct ClassMetrics {
  int64_t count = 0;
  double accuracy = 0.0;
  double macro_f1 = 0.0;
  std::vector<double> recall, precision, f1;  // per class
};

ClassMetrics class_metrics(const std::vector<int64_t>& confusion, int64_t classes);

// Per-class table (name, samples, recall, precision, F1) and the confusion matrix, for
// logs. NAMES may be empty (classes are then numbered).
std::string per_class_table(const ClassMetrics& m, const std::vector<int64_t>& confusion,
                            const std::vector<std::string>& names);
std::string confusion_table(const std::vector<int64_t>& confusion, int64_t classes);

}  // namespace lockstep
