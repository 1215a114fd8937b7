// lockstep sweep: a sweep file's runs — every combination of a line's values (first key
// slowest), lines in order, comments and blank lines skipped, run names safe as directory
// names, and each malformed file refused naming its line.
#include <gtest/gtest.h>

#include "core/base/error.hpp"
#include "core/tools/sweep_plan.hpp"
#include "test_helpers.hpp"

using namespace lockstep;

TEST(SweepPlan, ALineIsEveryCombinationOfItsValuesTheFirstKeySlowest) {
  const auto t = plan_sweep("# grid\nlr=0.05,0.1 batch-size=64,128\n\n--model=mlp train.lr=1e-3  # list\n", "s.txt");
  ASSERT_EQ(t.size(), 5u);
  EXPECT_EQ(t[0].name, "lr=0.05,batch-size=64");
  EXPECT_EQ(t[1].name, "lr=0.05,batch-size=128");
  EXPECT_EQ(t[2].name, "lr=0.1,batch-size=64");
  EXPECT_EQ(t[3].name, "lr=0.1,batch-size=128");
  EXPECT_EQ(t[4].name, "model=mlp,train.lr=1e-3");
  EXPECT_EQ(t[3].args(), (std::vector<std::string>{"--lr", "0.1", "--batch-size", "128"}));
  EXPECT_EQ(t[4].args(), (std::vector<std::string>{"--model", "mlp", "--train.lr", "1e-3"}));
}

TEST(SweepPlan, RunNamesAreSafeDirectoryNames) {
  const auto t = plan_sweep("model=torchscript:/home/me/m.pt init-from=a b=x*y\n", "s.txt");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].name, "model=torchscript__home_me_m.pt,init-from=a,b=x_y");
  EXPECT_EQ(t[0].overrides[0].second, "torchscript:/home/me/m.pt");  // the value itself is kept
}

TEST(SweepPlan, RefusesWhatItCannotRunNamingTheLine) {
  const auto refused = [](const std::string& text) {
    try {
      plan_sweep(text, "s.txt");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused("lr=0.1\nlr\n"), "s.txt:2: 'lr' is not KEY=VALUE[,VALUE...] (e.g. lr=0.05,0.1)");
  EXPECT_EQ(refused("=0.1\n"), "s.txt:1: '=0.1' is not KEY=VALUE[,VALUE...] (e.g. lr=0.05,0.1)");
  EXPECT_EQ(refused("lr=0.1,\n"), "s.txt:1: lr has an empty value in 'lr=0.1,'");
  EXPECT_EQ(refused("lr=0.1 lr=0.2\n"), "s.txt:1: lr is given twice on one line");
  EXPECT_EQ(refused("lr=0.1\n\nlr=0.1\n"), "s.txt:3: the run lr=0.1 is also on line 1: each run needs its own directory");
  EXPECT_EQ(refused("# nothing\n\n"), "s.txt: no runs (lines of KEY=VALUE[,VALUE...], e.g. lr=0.05,0.1 batch-size=64)");
}

// Hostile findings: a value holding commas (class-weights, freeze) could not be written; a
// grid of 10^8 runs was a bare std::bad_alloc.
TEST(SweepPlan, QuotedValuesKeepTheirCommasAndTheSweepHasABound) {
  const auto t = plan_sweep("class-weights=\"1,2,1\",\"1,1,1\" lr=0.1\n", "s.txt");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].overrides[0].second, "1,2,1");
  EXPECT_EQ(t[1].overrides[0].second, "1,1,1");
  EXPECT_EQ(t[0].name, "class-weights=1_2_1,lr=0.1");
  EXPECT_ERROR_CONTAINS(plan_sweep("freeze=\"a,b\n", "s.txt"), "s.txt:1: 'freeze=\"a,b' opens a quote it does not close");
  std::string grid;
  for (int k = 0; k < 8; ++k) grid += "k" + std::to_string(k) + "=0,1,2,3,4,5,6,7,8,9 ";
  EXPECT_ERROR_CONTAINS(plan_sweep(grid + "\n", "s.txt"), "s.txt:1: the sweep would have 100000000 runs, more than 10000");
  std::string huge;
  for (int k = 0; k < 20; ++k) huge += "k" + std::to_string(k) + "=0,1,2,3,4,5,6,7,8,9 ";
  EXPECT_ERROR_CONTAINS(plan_sweep(huge + "\n", "s.txt"), "s.txt:1: the sweep would have over 10^18 runs");
  EXPECT_ERROR_CONTAINS(plan_sweep("init-exclude=" + std::string(300, 'a') + " lr=0.1\n", "s.txt"),
                        "s.txt:1: the run name init-exclude=aaaa");
  std::string lines;
  for (int i = 0; i < 101; ++i) lines += "lr=" + std::to_string(i) + " seed=0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65,66,67,68,69,70,71,72,73,74,75,76,77,78,79,80,81,82,83,84,85,86,87,88,89,90,91,92,93,94,95,96,97,98,99\n";
  EXPECT_ERROR_CONTAINS(plan_sweep(lines, "s.txt"), "s.txt:101: the sweep would have 10100 runs");
}
