// lockstep sweep: a sweep file's runs — every combination of a line's values (first key
// slowest), lines in order, comments and blank lines skipped, run names safe as directory
// names, and each malformed file refused naming its line.
#include <gtest/gtest.h>

#include "core/base/error.hpp"
#include "core/tools/sweep_plan.hpp"

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
