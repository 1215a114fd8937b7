// JSON writing (metrics rows, manifest) and reading back.
#include <gtest/gtest.h>

#include <cmath>

#include "io/dataset/shard_format.hpp"
#include "io/util/file_util.hpp"
#include "io/util/json_io.hpp"
#include "io/records/metrics_log.hpp"
#include "test_helpers.hpp"

using namespace lockstep::io;
using lockstep::Error;

TEST(Json, ObjectRoundTripsThroughTheParser) {
  const Json o = {{"s", "a \"quoted\"\nline"}, {"i", int64_t{42}}, {"d", 0.125}, {"b", true},
                  {"v", std::vector<int64_t>{1, 2}}, {"n", {{"x", 1}}}, {"big", uint64_t{18446744073709551615ull}}};
  const Json t = parse_json(dump_json(o), "test");
  EXPECT_EQ(json_get<std::string>(t, "s", "test"), "a \"quoted\"\nline");
  EXPECT_EQ(json_get<int>(t, "i", "test"), 42);
  EXPECT_DOUBLE_EQ(json_get<double>(t, "d", "test"), 0.125);
  EXPECT_EQ(t["n"]["x"], 1);
  EXPECT_EQ(json_get<uint64_t>(t, "big", "test"), 18446744073709551615ull);  // 64-bit integers stay integers
  EXPECT_ERROR_CONTAINS(json_get<int>(t, "s", "m.json"), "m.json: key 's' holds a malformed value");
  EXPECT_ERROR_CONTAINS(json_get<int>(t, "nope", "m.json"), "m.json: missing key 'nope'");
  EXPECT_ERROR_CONTAINS(parse_json("{oops", "m.json"), "m.json: not valid JSON");
}

// Regression (fuzz_manifest, tests/fuzz/seeds/manifest/regress-number-overflow.json): a
// number too large for a double was nlohmann's out_of_range, not a parse_error, and escaped
// as an exception without the file's name.
TEST(Json, ANumberBeyondDoubleRangeIsAnErrorNamingTheFile) {
  EXPECT_ERROR_CONTAINS(parse_json("{\"mean\": [73.0e105843297379214]}", "m.json"), "m.json: not valid JSON");
  EXPECT_ERROR_CONTAINS(parse_json("1e400", "m.json"), "number overflow");
  const std::string dir = lockstep::testing::fresh_dir("json-overflow");
  write_file_atomic(dir + "/manifest.json", "{\"lockstep_names\": [], \"mean\": [1e999]}");
  EXPECT_ERROR_CONTAINS(read_manifest(dir), "manifest.json: not valid JSON");
}

// Regression (fuzz_manifest, tests/fuzz/seeds/manifest/regress-float-to-int.json):
// nlohmann's get<int>() casts a float or a wider integer without a range check (undefined
// behaviour: UBSan's float-cast-overflow). json_as / json_get refuse what does not fit.
TEST(Json, IntegersAreRangeCheckedNeverCast) {
  const Json t = parse_json(
      "{\"f\": 1e300, \"neg\": -1, \"wide\": 4294967296, \"half\": 2.5, \"whole\": 3.0, \"nan\": -1e-400,"
      " \"top\": 9223372036854775807, \"over\": 9223372036854775808, \"fbig\": 1e39, \"b\": 1,"
      " \"v\": [1, 2.5], \"two63\": 9.223372036854775808e18}",
      "m.json");
  EXPECT_ERROR_CONTAINS(json_get<int>(t, "f", "m.json"), "m.json: key 'f' holds a malformed value 1e+300");
  EXPECT_ERROR_CONTAINS(json_get<int64_t>(t, "f", "m.json"), "key 'f' holds a malformed value");
  EXPECT_ERROR_CONTAINS(json_get<uint64_t>(t, "neg", "m.json"), "key 'neg' holds a malformed value -1");
  EXPECT_ERROR_CONTAINS(json_get<int>(t, "wide", "m.json"), "key 'wide' holds a malformed value 4294967296");
  EXPECT_ERROR_CONTAINS(json_get<int>(t, "half", "m.json"), "key 'half' holds a malformed value 2.5");
  EXPECT_EQ(json_get<int>(t, "whole", "m.json"), 3);  // an integral float is taken
  EXPECT_EQ(json_get<int>(t, "nan", "m.json"), 0);    // -0.0 (underflow) is integral
  EXPECT_EQ(json_get<int64_t>(t, "top", "m.json"), INT64_MAX);
  EXPECT_ERROR_CONTAINS(json_get<int64_t>(t, "over", "m.json"), "key 'over' holds a malformed value");
  EXPECT_EQ(json_get<uint64_t>(t, "over", "m.json"), 9223372036854775808ull);
  EXPECT_ERROR_CONTAINS(json_get<int64_t>(t, "two63", "m.json"), "key 'two63' holds a malformed value");
  EXPECT_EQ(json_get<uint64_t>(t, "two63", "m.json"), 9223372036854775808ull);
  EXPECT_ERROR_CONTAINS(json_get<float>(t, "fbig", "m.json"), "key 'fbig' holds a malformed value");
  EXPECT_DOUBLE_EQ(json_get<double>(t, "fbig", "m.json"), 1e39);
  EXPECT_ERROR_CONTAINS(json_get<bool>(t, "b", "m.json"), "key 'b' holds a malformed value 1");
  EXPECT_ERROR_CONTAINS(json_get<std::vector<int64_t>>(t, "v", "m.json"), "key 'v' holds a malformed value [1,2.5]");
  EXPECT_EQ(json_get<std::vector<double>>(t, "v", "m.json"), (std::vector<double>{1.0, 2.5}));
  EXPECT_ERROR_CONTAINS(json_as<int16_t>(Json(40000), "m.json: 'x'"), "m.json: 'x' holds a malformed value 40000");
  EXPECT_ERROR_CONTAINS(json_as<std::string>(Json(1), "m.json: 'x'"), "m.json: 'x' holds a malformed value 1");
  // The manifest reader, where the fuzzer found it.
  const std::string dir = lockstep::testing::fresh_dir("json-float-int");
  write_file_atomic(dir + "/manifest.json", "{\"lockstep_format\": 1e300, \"sample_shape\": [1]}");
  EXPECT_ERROR_CONTAINS(read_manifest(dir), "manifest.json: key 'lockstep_format' holds a malformed value 1e+300");
}

TEST(Json, NonFiniteNumbersBecomeNullAndBytesNeverThrow) {
  EXPECT_EQ(dump_json(Json{{"x", std::nan("")}}), "{\"x\":null}");
  EXPECT_EQ(dump_json(Json{{"x", INFINITY}}), "{\"x\":null}");
  const std::string latin1 = "caf\xe9";  // a path in a run's config is bytes, not UTF-8
  EXPECT_EQ(dump_json(Json{{"p", latin1}}), "{\"p\":\"caf\xef\xbf\xbd\"}");
}

TEST(MetricsLog, AppendsOneObjectPerLine) {
  const std::string dir = lockstep::testing::fresh_dir("metrics");
  {
    MetricsLog log(dir + "/m.jsonl", 0);
    log.write("{\"step\": 1}");
  }
  {
    MetricsLog log(dir + "/m.jsonl", 1);  // a run resumed at step 1 appends
    log.write("{\"step\": 2}");
  }
  EXPECT_EQ(read_text_file(dir + "/m.jsonl"), "{\"step\": 1}\n{\"step\": 2}\n");
  EXPECT_THROW(MetricsLog(dir + "/no/such/m.jsonl", 0), lockstep::Error);
}
