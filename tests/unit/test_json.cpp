// JSON writing (metrics rows, manifest) and reading back.
#include <gtest/gtest.h>

#include <boost/property_tree/ptree.hpp>
#include <cmath>

#include "io/file_util.hpp"
#include "io/json.hpp"
#include "io/metrics_log.hpp"
#include "test_helpers.hpp"

using namespace lockstep::io;

TEST(Json, ObjectRoundTripsThroughTheParser) {
  JsonObject o;
  o.add("s", "a \"quoted\"\nline").add("i", int64_t{42}).add("d", 0.125).add("b", true)
      .add("v", std::vector<int64_t>{1, 2}).add("n", JsonObject().add("x", 1));
  const auto t = json_parse(o.str(), "test");
  EXPECT_EQ(t.get<std::string>("s"), "a \"quoted\"\nline");
  EXPECT_EQ(t.get<int>("i"), 42);
  EXPECT_DOUBLE_EQ(t.get<double>("d"), 0.125);
  EXPECT_EQ(t.get<int>("n.x"), 1);
}

TEST(Json, NonFiniteNumbersBecomeNull) {
  EXPECT_EQ(json_number(std::nan("")), "null");
  EXPECT_EQ(json_number(INFINITY), "null");
}

TEST(MetricsLog, AppendsOneObjectPerLine) {
  const std::string dir = lockstep::testing::fresh_dir("metrics");
  {
    MetricsLog log(dir + "/m.jsonl", 0);
    log.write(JsonObject().add("step", 1).str());
  }
  {
    MetricsLog log(dir + "/m.jsonl", 1);  // a run resumed at step 1 appends
    log.write(JsonObject().add("step", 2).str());
  }
  EXPECT_EQ(read_text_file(dir + "/m.jsonl"), "{\"step\": 1}\n{\"step\": 2}\n");
  EXPECT_THROW(MetricsLog(dir + "/no/such/m.jsonl", 0), lockstep::Error);
}
