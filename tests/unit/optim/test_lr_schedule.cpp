// Learning-rate schedule: a pure function of the step.
#include <gtest/gtest.h>

#include "core/optim/lr_schedule.hpp"

using lockstep::LrSchedule;
using lockstep::Schedule;

TEST(LrSchedule, ConstantWithWarmup) {
  const LrSchedule s{Schedule::kConstant, 0.1, 4, 100, 0.0};
  EXPECT_DOUBLE_EQ(s.at(0), 0.025);
  EXPECT_DOUBLE_EQ(s.at(3), 0.1);
  EXPECT_DOUBLE_EQ(s.at(50), 0.1);
}

TEST(LrSchedule, CosineFromBaseToFloor) {
  const LrSchedule s{Schedule::kCosine, 0.2, 0, 100, 0.1};
  EXPECT_DOUBLE_EQ(s.at(0), 0.2);
  EXPECT_NEAR(s.at(50), 0.2 * (0.1 + 0.9 * 0.5), 1e-12);
  EXPECT_NEAR(s.at(100), 0.02, 1e-12);
  EXPECT_NEAR(s.at(1000), 0.02, 1e-12);  // past the end: stays at the floor
  for (int64_t i = 1; i <= 100; ++i) EXPECT_LE(s.at(i), s.at(i - 1));
}

TEST(LrSchedule, CosineStartsAfterWarmup) {
  const LrSchedule s{Schedule::kCosine, 1.0, 10, 110, 0.0};
  EXPECT_DOUBLE_EQ(s.at(9), 1.0);
  EXPECT_DOUBLE_EQ(s.at(10), 1.0);
  EXPECT_NEAR(s.at(60), 0.5, 1e-12);
}
