// write_files_atomic: a set of files replaced all or none. A hostile finding (helper-46):
// `lockstep report` on a full disk wrote report.md and curves.svg, then failed on
// report.html, leaving a new table beside an old page.
#include <gtest/gtest.h>

#include "core/base/error.hpp"
#include "io/util/file_util.hpp"
#include "test_helpers.hpp"

using namespace lockstep;

TEST(AtomicWrites, ASetIsWrittenWholeOrNotAtAll) {
  const std::string dir = lockstep::testing::fresh_dir("atomic_set");
  io::write_file_atomic(dir + "/a.md", "old a");
  io::write_file_atomic(dir + "/b.svg", "old b");
  // The third file cannot be written (its folder is missing): nothing of the set lands.
  EXPECT_THROW(io::write_files_atomic({{dir + "/a.md", "new a"}, {dir + "/b.svg", "new b"}, {dir + "/no/c.html", "c"}}),
               Error);
  EXPECT_EQ(io::read_text_file(dir + "/a.md"), "old a");
  EXPECT_EQ(io::read_text_file(dir + "/b.svg"), "old b");
  EXPECT_EQ(io::list_dir(dir), (std::vector<std::string>{"a.md", "b.svg"})) << "a temp file was left behind";
  io::write_files_atomic({{dir + "/a.md", "new a"}, {dir + "/b.svg", "new b"}});
  EXPECT_EQ(io::read_text_file(dir + "/a.md"), "new a");
  EXPECT_EQ(io::read_text_file(dir + "/b.svg"), "new b");
}
