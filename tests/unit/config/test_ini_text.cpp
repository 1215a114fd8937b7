// Issue 31 (5), a class: a value in a config.ini lockstep wrote did not always read back
// (a '#' in --data or --run.dir was cut as a comment on re-use: the run trained on another
// dataset in another directory; a newline broke the file). ini_text writes every value so
// that it reads back byte for byte; these are the members of the class we know.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/config/ini_text.hpp"
#include "test_helpers.hpp"

using namespace lockstep;

namespace {

std::string round_trip(const std::string& value) {
  const auto entries = parse_ini("[data]\npath = " + ini_value(value) + "\n", "t.ini");
  EXPECT_EQ(entries.size(), 1u);
  return entries.empty() ? "<none>" : entries[0].value;
}

}  // namespace

TEST(IniText, OddValuesReadBackByteForByte) {
  std::string every_byte;
  for (int c = 1; c < 256; ++c) every_byte += static_cast<char>(c);
  for (const std::string& v :
       {std::string("/data/run#3"), std::string("exp;2"), std::string("a\nb"), std::string("line\r\n"),
        std::string(" leading"), std::string("trailing\t"), std::string(""), std::string("say \"hi\""),
        std::string("C:\\path\\x"), std::string("tab\there"), std::string("#"), std::string("\""),
        std::string("caf\xe9-\xff"), std::string("\\x41"), std::string("= = ="), every_byte})
    EXPECT_EQ(round_trip(v), v) << ini_value(v);
  EXPECT_EQ(ini_value("/plain/path-1.h5"), "/plain/path-1.h5");  // what needs no quotes gets none
}

TEST(IniText, HandWrittenJobFilesReadAsBefore) {
  const auto e = parse_ini(
      "# a job file\n; another comment\n\n[train]\nlr = 0.05   # inline comment\n  epochs=3\r\n"
      "[model]\nname = cnn\ninit-from = \"w#1.ckpt\"  # quoted keeps its '#'\nempty =\n",
      "job.ini");
  ASSERT_EQ(e.size(), 5u);
  EXPECT_EQ(e[0].key, "train.lr");
  EXPECT_EQ(e[0].value, "0.05");
  EXPECT_EQ(e[1].key, "train.epochs");
  EXPECT_EQ(e[1].value, "3");
  EXPECT_EQ(e[1].line, 6);
  EXPECT_EQ(e[3].value, "w#1.ckpt");
  EXPECT_EQ(e[4].value, "");
  // A hostile round: "r_hash#1" was cut to "r_hash" (a comment starts after a blank only),
  // "runs/x ; old" was a directory of that name, and Excel's byte-order mark broke line 1.
  const auto f =
      parse_ini("\xEF\xBB\xBF[run]\ndir = r_hash#1\nresume = runs/x ; old\nlog = a;b\t# note\nlater = # soon\n", "bom.ini");
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[3].value, "");
  EXPECT_EQ(f[0].key, "run.dir");
  EXPECT_EQ(f[0].value, "r_hash#1");
  EXPECT_EQ(f[1].value, "runs/x");
  EXPECT_EQ(f[2].value, "a;b");
}

TEST(IniText, MalformedLinesNameTheFileAndLine) {
  const std::vector<std::pair<std::string, std::string>> bad{
      {"[train\nlr = 1\n", "job.ini:1: a section header"},
      {"[]\n", "job.ini:1: an empty section name"},
      {"[train]\nlr 0.1\n", "job.ini:2: expected \"key = value\""},
      {"[train]\n= 3\n", "job.ini:2: a value with no key"},
      {"[data]\npath = \"/open\n", "job.ini:2: a quoted value has no closing"},
      {"[data]\npath = \"a\" b\n", "job.ini:2: text after the closing"},
      {"[data]\npath = \"a\\q\"\n", "job.ini:2: unknown escape '\\q'"},
      {"[data]\npath = \"a\\x4\"\n", "job.ini:2: \\x in a quoted value needs two hex digits"},
      {"[data]\npath = \"a\\", "job.ini:2: a quoted value ends in a lone"}};
  for (const auto& [text, needle] : bad) EXPECT_ERROR_CONTAINS(parse_ini(text, "job.ini"), needle);
}
