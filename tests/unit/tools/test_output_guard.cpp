// Issue 31 (1), a class: an output that aliases an input, or a dataset's or run's own
// file, was written over (evaluate --eval.out fm/manifest.json deleted the dataset). One
// check (core/tools/output_guard) for every command's output, whatever the spelling.
#include <gtest/gtest.h>
#include <unistd.h>

#include "core/base/error.hpp"
#include "core/tools/output_guard.hpp"
#include "io/util/file_util.hpp"
#include "io/util/temp_files.hpp"
#include "test_helpers.hpp"

using namespace lockstep;

namespace {

class OutputGuard : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = lockstep::testing::fresh_dir("guard");
    data_ = root_ + "/fm";
    io::make_dirs(data_);
    const io::Manifest m = lockstep::testing::write_tiny_dataset(data_, 20, 2);
    shard_ = m.splits[0].second.shards[1].file;
    run_ = root_ + "/run";
    io::make_dirs(run_ + "/checkpoints");
    io::write_file_atomic(run_ + "/lock", "pid 1\n");
    io::write_file_atomic(run_ + "/config.ini", "[train]\n");
    io::write_file_atomic(run_ + "/metrics.jsonl", "");
    ckpt_ = run_ + "/checkpoints/step-000000010.ckpt";
    io::write_file_atomic(ckpt_, "a checkpoint");
  }

  // The reason OUT is refused ("" when it may be written).
  std::string refused(const std::string& out, const std::string& option = "--eval.out", bool replace = true) {
    try {
      check_output(option, out, {ckpt_}, replace);
      return "";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(option + " " + out + " is ", 0), 0u) << e.what();
      return e.what();
    }
  }

  std::string root_, data_, run_, ckpt_, shard_;
};

}  // namespace

TEST_F(OutputGuard, ADatasetsManifestAndShardsHoweverSpelled) {
  EXPECT_NE(refused(data_ + "/manifest.json").find("the manifest of dataset"), std::string::npos);
  EXPECT_NE(refused(data_ + "/../fm/manifest.json"), "");
  EXPECT_NE(refused(data_ + "//manifest.json"), "");
  ASSERT_EQ(::symlink(data_.c_str(), (root_ + "/link").c_str()), 0);
  EXPECT_NE(refused(root_ + "/link/manifest.json"), "");
  EXPECT_NE(refused(data_ + "/" + shard_, "--predict.out").find("of dataset"), std::string::npos);
  EXPECT_NE(refused(root_ + "/link/./" + shard_, "--predict.out"), "");
  EXPECT_NE(refused(data_ + "/val-00000-of-00001.h5", "--predict.out"), "");  // a shard name, even unlisted
  EXPECT_EQ(refused(data_ + "/predictions.csv", "--predict.out"), "");  // a new file beside them is fine
}

TEST_F(OutputGuard, ARunsOwnFilesAndFolders) {
  for (const char* own : {"metrics.jsonl", "config.ini", "lock", "train.log", "command.txt", "resumable"})
    EXPECT_NE(refused(run_ + "/" + own).find("of run"), std::string::npos) << own;
  EXPECT_NE(refused(run_ + "/checkpoints/eval.json").find("checkpoints/ folder of run"), std::string::npos);
  EXPECT_NE(refused(run_ + "/tb/x.json"), "");
  EXPECT_EQ(refused(run_ + "/eval.json"), "");  // a new file in the run directory is fine
}

TEST_F(OutputGuard, WhatTheCommandReadsEvenThroughAHardLinkOrSymlink) {
  EXPECT_NE(refused(ckpt_, "--export.out").find("which this command reads"), std::string::npos);
  const std::string hard = root_ + "/hard.ckpt", soft = root_ + "/soft.ckpt";
  ASSERT_EQ(::link(ckpt_.c_str(), hard.c_str()), 0);
  ASSERT_EQ(::symlink(ckpt_.c_str(), soft.c_str()), 0);
  EXPECT_NE(refused(hard, "--export.out").find("the same file as " + ckpt_), std::string::npos);
  EXPECT_NE(refused(soft, "--export.out"), "");
  EXPECT_NE(refused(root_).find("a directory"), std::string::npos);
  EXPECT_EQ(refused(root_ + "/new.json"), "");
  EXPECT_EQ(io::read_text_file(ckpt_), "a checkpoint");  // nothing was written
}

// A hostile finding: predict --out, export --out and evaluate --eval.out replaced any existing
// file (a user's own results, or the --config job file itself); a missing folder failed only
// after the whole inference, naming a temporary file.
TEST_F(OutputGuard, AnExistingFileOnlyWithForceAndAMissingFolderBeforeTheWork) {
  const std::string mine = root_ + "/precious.csv";
  io::write_file_atomic(mine, "precious");
  EXPECT_NE(refused(mine, "--predict.out", /*replace=*/false).find("is an existing file: pass --force"), std::string::npos);
  EXPECT_EQ(refused(mine, "--predict.out", /*replace=*/true), "");
  ASSERT_EQ(::symlink(mine.c_str(), (root_ + "/dangling-or-not").c_str()), 0);
  EXPECT_NE(refused(root_ + "/dangling-or-not", "--predict.out", false), "");
  EXPECT_NE(refused(root_ + "/no-such-folder/p.csv", "--predict.out").find("a folder that does not exist"),
            std::string::npos);
  EXPECT_EQ(refused(root_ + "/new.csv", "--predict.out", false), "");
  EXPECT_EQ(io::read_text_file(mine), "precious");
}

// A hostile finding: a SIGTERM during predict's write left out.csv.lockstep-tmp.PID.HOST,
// which no later run removed. Checking an output removes what a dead writer of that output
// left (temp_files' rule); another output's, or a live or remote writer's, stays.
TEST_F(OutputGuard, ADeadWritersTempOfThatOutputGoes) {
  const std::string host = io::this_writer().host;
  const long gone = lockstep::testing::exited_pid();
  const auto temp = [&](const std::string& target, long pid, const std::string& h) {
    const std::string path = root_ + "/" + target + ".lockstep-tmp." + std::to_string(pid) + "." + h;
    io::write_file_atomic(path, "half");
    return path;
  };
  const std::string dead = temp("p.csv", gone, host), live = temp("p.csv", 1, host),
                    remote = temp("p.csv", gone, "another-host"), other = temp("q.csv", gone, host);
  EXPECT_EQ(refused(root_ + "/p.csv", "--predict.out", false), "");
  EXPECT_FALSE(io::path_exists(dead));
  EXPECT_TRUE(io::path_exists(live));
  EXPECT_TRUE(io::path_exists(remote));
  EXPECT_TRUE(io::path_exists(other));
}

// A name over NAME_MAX is refused before the work; one up to it is fine (its temporary file's
// name is cut to fit: temp_files). Both failed after the work, naming the temporary file.
TEST_F(OutputGuard, ANameOverNameMaxBeforeTheWork) {
  EXPECT_NE(refused(root_ + "/" + std::string(256, 'p') , "--predict.out").find("a file name of 256 bytes"),
            std::string::npos);
  EXPECT_EQ(refused(root_ + "/" + std::string(251, 'p') + ".csv", "--predict.out"), "");
}
