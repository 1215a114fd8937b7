// The UEA/UCR .ts importer: layout [D, L], declared class order, and every refusal naming
// the file and line.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/base/error.hpp"
#include "io/import/ts_import.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::io;
using namespace lockstep::testing;

namespace {

const char* kHeader =
    "# two accelerometer axes\n"
    "@problemName Tiny\n@timeStamps false\n@missing false\n@univariate false\n@dimensions 2\n"
    "@equalLength true\n@seriesLength 3\n@classLabel true walk run sit\n@data\n";

TsTable parse(const std::string& text) {
  std::istringstream in(text);
  return parse_ts(in, "tiny.ts");
}

// The message of the Error parse_ts throws for TEXT ("" when it throws none).
std::string parse_error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(TsImport, CasesBecomeChannelsFirstSamplesWithDeclaredClassOrder) {
  const TsTable t = parse(std::string(kHeader) + "1,2,3:4,5,6:run\n\n# comment\n-1.5,0,2e-1:7,8,9:sit\n");
  EXPECT_EQ(t.dims, 2);
  EXPECT_EQ(t.length, 3);
  EXPECT_EQ(t.cases, 2);
  EXPECT_EQ(t.classes, (std::vector<std::string>{"walk", "run", "sit"}));
  EXPECT_EQ(t.labels, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(t.values, (std::vector<float>{1, 2, 3, 4, 5, 6, -1.5f, 0, 0.2f, 7, 8, 9}));
}

// A value too small for a float is a finite one (a denormal, or 0): strtof's ERANGE on an
// underflow refused it as "not a finite number"; an overflow (1e99 above) still is refused.
TEST(TsImport, ValuesBelowTheSmallestFloatAreReadAsTheNearestFloat) {
  const TsTable t = parse(std::string(kHeader) + "1,1e-40,1e-50:-1e-45,5,6:run\n");
  ASSERT_EQ(t.values.size(), 6u);
  EXPECT_EQ(t.values[1], std::strtof("1e-40", nullptr));
  EXPECT_GT(t.values[1], 0.0f);
  EXPECT_EQ(t.values[2], 0.0f);
  EXPECT_LE(t.values[3], 0.0f);
}

TEST(TsImport, HeaderKeysAreCaseInsensitiveAndUnlabeledFilesHaveNoClasses) {
  const TsTable t = parse("% an ARFF-style comment\n@TIMESTAMPS false\n@CLASSLABEL false\n@DATA\n1,2:3,4\n5,6:7,8\n");
  EXPECT_EQ(t.dims, 2);
  EXPECT_TRUE(t.classes.empty());
  EXPECT_EQ(t.labels, (std::vector<int64_t>{0, 0}));
}

TEST(TsImport, EveryMalformedFileIsOneErrorNamingFileAndLine) {
  const std::string h = kHeader;
  const struct {
    std::string text, expect;
  } cases[] = {
      {h + "1,2,3:4,5:walk\n", "tiny.ts:11: dimension 1 has length 2"},
      {h + "1,2,3:4,5,6:walk\n1,2:4,5:walk\n", "tiny.ts:12: series of length 2, @seriesLength says 3"},
      {h + "1,?,3:4,5,6:walk\n", "tiny.ts:11: dimension 0 has a missing value"},
      {h + "1,x,3:4,5,6:walk\n", "value 'x' is not a finite number"},
      {h + "1,1e99,3:4,5,6:walk\n", "value '1e99' is not a finite number"},
      {h + "1,,3:4,5,6:walk\n", "value '' is not a finite number"},
      {h + "1,2,3:walk\n", "tiny.ts:11: 1 dimension(s), @dimensions says 2"},
      {h + "1,2,3:4,5,6:walk\n1,2,3:4,5,6:1,2,3:walk\n", "tiny.ts:12: 3 dimension(s), the first case has 2"},
      {h + "1,2,3:4,5,6:fly\n", "class label 'fly' is not one @classLabel declares"},
      {h + "1,2,3\n", "tiny.ts:11: a case needs its series and a class label"},
      {h + " :4,5,6:walk\n", "dimension 0 is an empty series"},
      {h, "tiny.ts: no cases after @data"},
      {"@classLabel true a\n", "tiny.ts: no @data line"},
      {"@data\n1,2:a\n", "tiny.ts: no @classLabel line before @data"},
      {"1,2:a\n", "tiny.ts:1: expected a '@' header line"},
      {"@timeStamps true\n", "tiny.ts:1: timestamped series"},
      {"@targetLabel true\n", "tiny.ts:1: a regression problem"},
      {"@dimensions -3\n", "tiny.ts:1: '-3' is not a positive count"},
      {"@seriesLength 99999999999\n", "is not a positive count"},
      {"@classLabel maybe\n", "@classLabel must be followed by true or false"},
      {"@classLabel true\n", "@classLabel true declares no class labels"},
      {"@classLabel true a b a\n", "class label 'a' is declared twice"},
  };
  for (const auto& c : cases) {
    const std::string msg = parse_error_of(c.text);
    EXPECT_NE(msg.find(c.expect), std::string::npos) << "input:\n" << c.text << "\nmessage: " << msg;
  }
}

TEST(TsImport, TrainAndTestFilesMustAgreeOnShapeAndClasses) {
  const std::string dir = fresh_dir("ts");
  std::ofstream(dir + "/train.ts") << kHeader << "1,2,3:4,5,6:walk\n1,2,3:4,5,6:sit\n";
  std::ofstream(dir + "/test.ts") << kHeader << "1,2,3:4,5,6:run\n";
  std::vector<std::string> names;
  auto inputs = open_ts({{"train", dir + "/train.ts"}, {"test", dir + "/test.ts"}}, &names);
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(names, (std::vector<std::string>{"walk", "run", "sit"}));
  EXPECT_EQ(inputs[0].source->spec().sample_shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(inputs[0].source->spec().num_classes, 3);
  EXPECT_TRUE(inputs[0].with_val);
  EXPECT_FALSE(inputs[1].with_val);
  std::vector<float> got(6);
  inputs[0].source->read(1, 1, got.data());
  EXPECT_EQ(got, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(inputs[0].source->labels(), (std::vector<int64_t>{0, 2}));

  std::ofstream(dir + "/other.ts") << "@classLabel true walk run\n@data\n1,2,3:4,5,6:run\n";
  EXPECT_THROW(
      {
        try {
          open_ts({{"train", dir + "/train.ts"}, {"test", dir + "/other.ts"}}, &names);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("other.ts: declares other class labels"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  std::ofstream(dir + "/one.ts") << "@classLabel true walk run sit\n@data\n1,2:run\n";
  try {
    open_ts({{"train", dir + "/train.ts"}, {"test", dir + "/one.ts"}}, &names);
    ADD_FAILURE() << "a test file of another dimension count was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one.ts: cases of 1 dimension(s)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(open_ts({{"train", dir + "/missing.ts"}}, &names), Error);
}

TEST(TsImport, UnequalLengthsBecomeRaggedSamples) {
  // Cases of lengths 3 and 2 in train, 4 in test: [2, 4] samples, zero-padded, lengths kept.
  const std::string dir = fresh_dir("tsragged");
  std::ofstream(dir + "/train.ts") << "@classLabel true a b\n@data\n1,2,3:4,5,6:a\n7,8:9,10:b\n";
  std::ofstream(dir + "/test.ts") << "@classLabel true a b\n@data\n1,2,3,4:5,6,7,8:b\n";
  std::vector<std::string> names;
  auto inputs = open_ts({{"train", dir + "/train.ts"}, {"test", dir + "/test.ts"}}, &names);
  const DatasetSpec& spec = inputs[0].source->spec();
  EXPECT_TRUE(spec.ragged);
  EXPECT_EQ(spec.sample_shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(spec.record_width(), 2);
  EXPECT_EQ(inputs[0].source->extras(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(inputs[1].source->extras(), (std::vector<int64_t>{4}));
  std::vector<float> got(16);
  inputs[0].source->read(0, 2, got.data());
  EXPECT_EQ(got, (std::vector<float>{1, 2, 3, 0, 4, 5, 6, 0, 7, 8, 0, 0, 9, 10, 0, 0}));
  EXPECT_NE(parse_error_of("@classLabel true a\n@data\n1,2,3:4,5:a\n").find("dimension 1 has length 2, dimension 0 has 3"),
            std::string::npos);
}
