// text_fields: one CSV record's fields as RFC 4180 writes them. helper-41: a label written
// "rest" (pandas quotes with QUOTE_ALL, Excel when a value holds a comma) became a class of
// its own, quotes included, next to rest; a quoted path or a label with a comma was refused.
#include <gtest/gtest.h>

#include <fstream>

#include "core/base/error.hpp"
#include "io/import/csv_import.hpp"
#include "io/import/text_fields.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::io;

TEST(TextFields, QuotedFieldsAreTheirValueWithoutQuotes) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split_quoted_fields("a.mp4,3,rest", ',', "x", 1), (V{"a.mp4", "3", "rest"}));
  EXPECT_EQ(split_quoted_fields("\"a.mp4\",3,\"rest\"", ',', "x", 1), (V{"a.mp4", "3", "rest"}));
  EXPECT_EQ(split_quoted_fields("\"sp ace é.mp4\", 3 ,\"cat, black\"", ',', "x", 1), (V{"sp ace é.mp4", "3", "cat, black"}));
  EXPECT_EQ(split_quoted_fields("\"say \"\"hi\"\"\",,", ',', "x", 1), (V{"say \"hi\"", "", ""}));
  EXPECT_EQ(split_quoted_fields("  \"a\"  ;b\r", ';', "x", 1), (V{"a", "b"}));
  EXPECT_EQ(split_quoted_fields("it's 5\" tall,x", ',', "x", 1), (V{"it's 5\" tall", "x"})) << "a quote inside an unquoted field is text";
  EXPECT_EQ(split_quoted_fields("", ',', "x", 1), (V{""}));
  EXPECT_ERROR_CONTAINS(split_quoted_fields("a,\"b", ',', "f.csv", 7), "f.csv:7: a quoted field is not closed");
  EXPECT_ERROR_CONTAINS(split_quoted_fields("a,\"b\"c,d", ',', "f.csv", 7), "f.csv:7: text after the closing quote of field 2");
}

TEST(TextFields, AQuotedCsvImportsAsTheUnquotedOne) {
  const std::string dir = lockstep::testing::fresh_dir("csv");
  std::ofstream(dir + "/plain.csv") << "a,b,activity\n1,2,walk\n3,4,sit\n";
  std::ofstream(dir + "/quoted.csv") << "\"a\",\"b\",\"activity\"\n1,2,\"walk\"\n\"3\",4,sit\n";
  std::vector<std::string> plain, quoted;
  auto p = open_csv({{"train", dir + "/plain.csv"}}, CsvOptions{}, &plain);
  auto q = open_csv({{"train", dir + "/quoted.csv"}}, CsvOptions{}, &quoted);
  EXPECT_EQ(quoted, plain);
  EXPECT_EQ(q[0].source->labels(), p[0].source->labels());
  // A quoted ';' is text, not the one-line-several-records separator.
  std::ofstream(dir + "/semi.csv") << "a,b,activity\n1,2,\"walk;fast\"\n3,4,sit\n";
  std::vector<std::string> semi;
  open_csv({{"train", dir + "/semi.csv"}}, CsvOptions{}, &semi);
  EXPECT_EQ(semi, (std::vector<std::string>{"sit", "walk;fast"}));
}
