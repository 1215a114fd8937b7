// Issue 31 (2), a class: lockstep deleted files it did not make (a user's notes.tmp.123,
// thesis.tex.tmp.4242, as "left by a killed writer" without checking the writer) and
// adopted directories that were not its own. Now only files carrying lockstep's temp mark
// whose writer is gone are removed (io/util/temp_files), and a directory without
// lockstep's lock mark is refused unless it holds only what the caller may adopt
// (io/util/dir_lock). The run-directory and import members are in
// records/test_data_safety.cpp.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "io/util/dir_lock.hpp"
#include "io/util/file_util.hpp"
#include "io/util/temp_files.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::io;
using namespace lockstep::testing;

namespace {

std::string marked(const std::string& target, long pid, const std::string& host) {
  return target + ".lockstep-tmp." + std::to_string(pid) + "." + host;
}

void touch(const std::string& path) { std::ofstream(path) << "x"; }

bool no_adoption(const std::string&) { return false; }

}  // namespace

TEST(TempMark, OnlyLockstepsMarkedNamesParse) {
  const Writer me = this_writer();
  Writer who;
  std::string target;
  ASSERT_TRUE(parse_temp_name(base_name(temp_name_for("/d/config.ini")), &who, &target));
  EXPECT_EQ(who, me);
  EXPECT_EQ(target, "config.ini");
  ASSERT_TRUE(parse_temp_name("step-000000030.ckpt.lockstep-tmp.42.node-7.cluster.org", &who, &target));
  EXPECT_EQ(who.pid, 42);
  EXPECT_EQ(who.host, "node-7.cluster.org");
  EXPECT_EQ(target, "step-000000030.ckpt");
  // A user's temp files, and malformed marks, are not lockstep's.
  for (const char* name : {"notes.tmp.123", "thesis.tex.tmp.4242", "x.lockstep-tmp.12", "x.lockstep-tmp.12.",
                           "x.lockstep-tmp.abc.host", "x.lockstep-tmp.0.host", ".lockstep-tmp.5.host",
                           "x.lockstep-tmp..host", "x.lockstep-tmp.99999999999.host"})
    EXPECT_FALSE(parse_temp_name(name)) << name;
}

TEST(TempMark, OnlyMarkedFilesOfAGoneWriterAreRemoved) {
  const std::string dir = fresh_dir("temps");
  const std::string host = this_writer().host;
  const long gone = exited_pid();
  touch(dir + "/" + marked("a.ckpt", gone, host));              // removed: same host, no such process
  touch(dir + "/" + marked("b.ckpt", 1, host));                 // kept: pid 1 runs
  touch(dir + "/" + marked("c.ckpt", static_cast<long>(::getppid()), host));  // kept: our parent runs
  touch(dir + "/" + marked("d.ckpt", gone, "another-host"));    // kept: cannot tell on another host
  touch(dir + "/" + marked("e.ckpt", 77, "n9"));                // removed: it held the lock before us
  touch(dir + "/notes.tmp.123");                                // a user's: never touched
  touch(dir + "/thesis.tex.tmp.4242");
  const TempSweep sweep = remove_dead_temps(dir, Writer{77, "n9"});
  EXPECT_EQ(sweep.removed, (std::vector<std::string>{marked("a.ckpt", gone, host), marked("e.ckpt", 77, "n9")}));
  EXPECT_EQ(sweep.kept.size(), 3u);
  EXPECT_EQ(list_dir(dir).size(), 5u);
  EXPECT_TRUE(path_exists(dir + "/notes.tmp.123"));
  EXPECT_TRUE(path_exists(dir + "/thesis.tex.tmp.4242"));
}

// An output named up to NAME_MAX (255 bytes) is written: its temporary name keeps the mark
// within NAME_MAX on any host name (cut names stay apart and still match their output's
// sweep); it failed after the work with "File name too long".
TEST(TempMark, NamesUpToNameMaxGetATempNameWithinIt) {
  const std::string dir = fresh_dir("longname");
  const std::string a(255, 'a'), b = std::string(254, 'a') + "b";
  for (const std::string& name : {a, b, std::string(166, 'c'), std::string(167, 'c')}) {
    const std::string tmp = base_name(temp_name_for(dir + "/" + name));
    EXPECT_LE(tmp.size() - this_writer().host.size(), 255u - 64) << tmp;
    write_file_atomic(dir + "/" + name, "x");
    EXPECT_EQ(read_text_file(dir + "/" + name), "x");
  }
  EXPECT_EQ(temp_stem(std::string(166, 'c')), std::string(166, 'c'));  // short enough: as it is
  EXPECT_NE(temp_stem(a), temp_stem(b));
  EXPECT_EQ(temp_stem(a).size(), 166u);
  std::string accents;  // 2-byte UTF-8 characters: the cut keeps whole ones
  for (int i = 0; i < 150; ++i) accents += "\xc3\xa9";
  const std::string stem = temp_stem(accents);
  EXPECT_EQ(stem.find('~') % 2, 0u) << stem;
  EXPECT_LE(temp_stem(std::string(200, 'd'), 143).size() + 89, 143u);  // a folder that takes 143 (eCryptfs)
  // A killed writer's temp file of the long name is swept with its output, not another's.
  touch(dir + "/" + temp_stem(a) + ".lockstep-tmp." + std::to_string(exited_pid()) + "." + this_writer().host);
  touch(dir + "/" + temp_stem(b) + ".lockstep-tmp." + std::to_string(exited_pid()) + "." + this_writer().host);
  EXPECT_EQ(remove_dead_temps(dir, {}, a).removed.size(), 1u);
  EXPECT_EQ(remove_dead_temps(dir, {}, a).removed.size(), 0u);
  EXPECT_EQ(remove_dead_temps(dir, {}, b).removed.size(), 1u);
}

TEST(DirLock, ADirectoryWithoutTheMarkIsRefusedAndLeftAsItWas) {
  const std::string dir = fresh_dir("foreign");
  std::ofstream(dir + "/config.ini") << "[mine]\n";
  touch(dir + "/notes.tmp.123");
  EXPECT_ERROR_CONTAINS(DirLock(dir, "run", "--run.dir", no_adoption),
                        dir + " is not empty and holds files that are not a lockstep run (config.ini, notes.tmp.123)");
  EXPECT_EQ(list_dir(dir), (std::vector<std::string>{"config.ini", "notes.tmp.123"}));  // no lock file planted
  EXPECT_EQ(read_text_file(dir + "/config.ini"), "[mine]\n");
  try {
    DirLock lock(dir, "run", "--run.dir", no_adoption);
  } catch (const UsageError&) {
    // the refusal is the user's to fix: exit 2
  }
}

// "" + "/lock" is the root's lock file: an empty path is refused before anything is made.
TEST(DirLock, AnEmptyPathIsRefused) {
  EXPECT_ERROR_CONTAINS(DirLock("", "run", "--run.dir", no_adoption), "--run.dir is empty: name the run's directory");
}

TEST(DirLock, EmptyMissingAndAdoptableDirectoriesAreTakenAndMarked) {
  const std::string root = fresh_dir("adopt");
  { DirLock lock(root + "/new/deeper", "run", "--run.dir", no_adoption); }
  EXPECT_TRUE(has_lock_mark(root + "/new/deeper"));
  make_dirs(root + "/empty");
  { DirLock lock(root + "/empty", "run", "--run.dir", no_adoption); }
  EXPECT_TRUE(has_lock_mark(root + "/empty"));
  make_dirs(root + "/doctor");
  touch(root + "/doctor/doctor.json");
  touch(root + "/doctor/" + marked("doctor.json", exited_pid(), this_writer().host));
  { DirLock lock(root + "/doctor", "run", "--run.dir", [](const std::string& f) { return f == "doctor.json"; }); }
  EXPECT_TRUE(has_lock_mark(root + "/doctor"));
  // Once marked, the directory is lockstep's whatever else it holds (a user's notes beside a run).
  touch(root + "/empty/notes.txt");
  EXPECT_NO_THROW(DirLock(root + "/empty", "run", "--run.dir", no_adoption));
}

TEST(DirLock, ASecondHolderIsRefusedAndTheNextOneKnowsThePreviousWriter) {
  const std::string dir = fresh_dir("held") + "/d";
  {
    DirLock first(dir, "dataset", "--output", no_adoption);
    EXPECT_ERROR_CONTAINS(DirLock(dir, "dataset", "--output", no_adoption),
                          "dataset directory " + dir + " is in use by another job (pid " + std::to_string(::getpid()));
  }
  // A child takes the lock and dies without releasing it by hand: the kernel releases it,
  // and the next holder learns which writer is gone.
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      DirLock lock(dir, "dataset", "--output", no_adoption);
      ::_exit(0);
    } catch (...) {
      ::_exit(1);
    }
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  DirLock next(dir, "dataset", "--output", no_adoption);
  EXPECT_EQ(next.previous(), (Writer{static_cast<long>(child), this_writer().host}));
}

TEST(DirLock, HolderTextsParseBackToTheirWriter) {
  EXPECT_EQ(parse_lock_holder(lock_holder_text()), this_writer());
  EXPECT_EQ(parse_lock_holder("pid 12 on host n1 (Slurm job 9) since 2026-01-01T00:00:00Z"), (Writer{12, "n1"}));
  for (const char* text : {"", "my own lock file", "pid x on host n1", "pid 12 on host ", "pid  on host n1"})
    EXPECT_EQ(parse_lock_holder(text).pid, 0) << text;
}
