// core/train/stop_rule and the --train.stop-at grammar: early stopping and targets.
#include <gtest/gtest.h>

#include <cmath>

#include "core/config/config_checks.hpp"
#include "core/train/stop_rule.hpp"

using namespace lockstep;

namespace {
EvalResult eval(double acc, double f1, double loss, double cer = 0, double wer = 0) {
  EvalResult r;
  r.accuracy = acc;
  r.macro_f1 = f1;
  r.loss = loss;
  r.cer = cer;
  r.wer = wer;
  r.count = 1;
  return r;
}
}  // namespace

TEST(StopRule, EarlyStoppingCountsEvaluationsWithoutImprovement) {
  Config cfg;
  cfg.early_stop_metric = BestMetric::kValLoss;
  cfg.early_stop_patience = 2;
  cfg.early_stop_min_delta = 0.01;
  StopRule rule(cfg);
  EXPECT_EQ(rule.observe(eval(0.5, 0.5, 1.00), 10, 1), "");
  EXPECT_EQ(rule.observe(eval(0.5, 0.5, 0.95), 20, 2), "");   // improved by 0.05: the count restarts
  EXPECT_EQ(rule.observe(eval(0.5, 0.5, 0.945), 30, 3), "");  // by 0.005 < min delta: 1
  // The state survives a checkpoint: a resumed run counts on.
  StopRule resumed(cfg);
  resumed.load_state_json(rule.state_json(), "x");
  const std::string why = resumed.observe(eval(0.5, 0.5, 0.96), 40, 4);
  EXPECT_NE(why.find("val_loss did not improve by more than 0.01 for 2 evaluation(s) (best 0.9500"), std::string::npos)
      << why;
  // Another metric's count does not load (its best was a val_loss where val_acc is compared).
  Config acc = cfg;
  acc.early_stop_metric = BestMetric::kValAcc;
  StopRule other(acc);
  EXPECT_EQ(other.metric_counted(rule.state_json()), "val_loss");
  EXPECT_FALSE(other.load_state_json(rule.state_json(), "x"));
  EXPECT_FALSE(other.has_state());
  // No score (a CTC val_loss of no alignable sample is NaN) is neither a best nor a miss.
  StopRule fresh(cfg);
  EXPECT_EQ(fresh.observe(eval(0.5, 0.5, std::nan("")), 10, 1), "");
  EXPECT_FALSE(fresh.has_state());
}

TEST(StopRule, TargetsStopOnceReached) {
  Config cfg;
  ASSERT_EQ(check_config(&(cfg.stop_at = "val_acc>=0.9", cfg)), "");
  StopRule rule(cfg);
  EXPECT_EQ(rule.observe(eval(0.89, 0, 0), 10, 5), "");
  EXPECT_NE(rule.observe(eval(0.91, 0, 0), 20, 9.5).find("val_acc 0.9100 reached the target >=0.9 at step 20 after 9.5 s"),
            std::string::npos);
  BestMetric m;
  double v;
  EXPECT_TRUE(parse_stop_target("val_loss<=0.25", &m, &v));
  EXPECT_EQ(m, BestMetric::kValLoss);
  EXPECT_FALSE(parse_stop_target("val_loss>=0.25", &m, &v));
  EXPECT_FALSE(parse_stop_target("val_acc>=", &m, &v));
  EXPECT_FALSE(parse_stop_target("val_acc>=0.9x", &m, &v));
  EXPECT_TRUE(parse_stop_target("val_wer<=0.05", &m, &v));
  EXPECT_EQ(m, BestMetric::kValWer);
  EXPECT_FALSE(parse_stop_target("val_cer>=0.05", &m, &v));
}

TEST(StopRule, ErrorRatesAreLowerIsBetter) {
  Config cfg;
  ASSERT_EQ(check_config(&(cfg.stop_at = "val_cer<=0.05", cfg)), "");
  StopRule rule(cfg);
  EXPECT_EQ(rule.observe(eval(0, 0, 1, 0.2, 0.5), 10, 1), "");
  EXPECT_NE(rule.observe(eval(0, 0, 1, 0.04, 0.1), 20, 2).find("val_cer 0.0400 reached the target <=0.05"),
            std::string::npos);
  Config early;
  early.early_stop_metric = BestMetric::kValWer;
  early.early_stop_patience = 1;
  StopRule e(early);
  EXPECT_EQ(e.observe(eval(0, 0, 1, 0.2, 0.5), 10, 1), "");
  EXPECT_EQ(e.observe(eval(0, 0, 1, 0.2, 0.4), 20, 2), "");  // lower WER: an improvement
  EXPECT_NE(e.observe(eval(0, 0, 1, 0.2, 0.45), 30, 3).find("val_wer did not improve"), std::string::npos);
}

// Issue 31: a target validation can never reach (an accuracy above 1, a negative loss) was
// accepted and never stopped the run.
TEST(StopRule, UnreachableTargetsAreRefused) {
  for (const char* bad : {"val_acc>=1.5", "val_f1>=-0.1", "val_loss<=-1", "val_wer<=-0.5", "val_acc>=nan"}) {
    Config cfg;
    cfg.stop_at = bad;
    EXPECT_NE(check_config(&cfg).find(std::string("not '") + bad + "'"), std::string::npos) << bad;
  }
  for (const char* ok : {"val_acc>=1", "val_f1>=0", "val_loss<=0", "val_cer<=2.5"}) {
    Config cfg;
    cfg.stop_at = ok;
    EXPECT_EQ(check_config(&cfg), "") << ok;
  }
}
