// core/eval: classification metrics from a confusion matrix.
#include <gtest/gtest.h>

#include "core/eval/class_metrics.hpp"

using namespace lockstep;

TEST(ClassMetrics, MacroF1RecallAndPrecisionFromAConfusionMatrix) {
  // rows true, columns predicted
  const std::vector<int64_t> cm{5, 1, 0,   //
                                2, 3, 0,   //
                                0, 0, 0};  // class 2: no samples, never predicted
  const ClassMetrics m = class_metrics(cm, 3);
  EXPECT_EQ(m.count, 11);
  EXPECT_DOUBLE_EQ(m.accuracy, 8.0 / 11);
  EXPECT_DOUBLE_EQ(m.recall[0], 5.0 / 6);
  EXPECT_DOUBLE_EQ(m.precision[1], 3.0 / 4);
  EXPECT_TRUE(std::isnan(m.recall[2]));
  const double f1_0 = 2.0 * 5 / (6 + 7), f1_1 = 2.0 * 3 / (5 + 4);
  EXPECT_DOUBLE_EQ(m.macro_f1, (f1_0 + f1_1) / 2);  // class 2 left out
  const std::string table = per_class_table(m, cm, {"a", "b", "c"});
  EXPECT_NE(table.find("0 a"), std::string::npos);
  EXPECT_NE(table.find("macro-F1 0."), std::string::npos);
  EXPECT_NE(confusion_table(cm, 3).find("true\\pred"), std::string::npos);
}
