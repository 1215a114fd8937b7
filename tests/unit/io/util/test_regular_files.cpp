// Issue 31 (10), a class: a FIFO (or a device, a directory) named as any input blocked
// open() forever — under mpirun outside any collective, so no watchdog saw it. Every
// reader goes through io::require_regular_file first. Each case runs in a child process
// with an alarm, so a reader that still blocks fails this test instead of hanging it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "core/base/error.hpp"
#include "core/model/registry.hpp"
#include "core/train/checkpoint_state.hpp"
#include "core/train/weight_source.hpp"
#include "io/dataset/shard_format.hpp"
#include "io/import/audio_import.hpp"
#include "io/import/idx_import.hpp"
#include "io/import/import_spec.hpp"
#include "io/records/checkpoint_store.hpp"
#include "io/records/safetensors.hpp"
#include "io/records/sweep_data.hpp"
#include "io/util/file_util.hpp"
#include "test_helpers.hpp"

using namespace lockstep;

namespace {

// 0: refused naming PATH as not a regular file; 1: returned; 2: another error; 14
// (SIGALRM): blocked.
int outcome(const std::function<void()>& read, const std::string& path, const std::string& kind) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(10);
    int code = 1;
    try {
      read();
    } catch (const std::exception& e) {
      const std::string what = e.what();
      code = what.find(path + ": not a regular file (" + kind + ")") != std::string::npos ? 0 : 2;
      if (code == 2) std::fprintf(stderr, "other error: %s\n", e.what());
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
}

io::OpenedImport shard_input(const std::string& input) {
  io::ImportSpec spec;
  spec.input = input;
  spec.options.output_dir = "/nonexistent-out";
  return io::open_import(spec);
}

class NonRegularInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = lockstep::testing::fresh_dir("fifo");
    fifo_ = dir_ + "/pipe";
    for (const char* ext : {"", ".ckpt", ".safetensors"}) ASSERT_EQ(::mkfifo((fifo_ + ext).c_str(), 0600), 0);
  }
  std::string dir_, fifo_;
};

}  // namespace

TEST_F(NonRegularInputs, EveryReaderRefusesAFifoBeforeOpeningIt) {
  const std::vector<std::pair<const char*, std::function<void()>>> readers = {
      {"checkpoint (--resume)", [&] { io::read_checkpoint(fifo_); }},
      {"safetensors", [&] { io::read_safetensors(fifo_); }},
      {"torchscript model", [&] { load_script_model(fifo_, io::DatasetSpec{}); }},
      {"csv input", [&] { shard_input("csv:" + fifo_); }},
      {"ts input", [&] { shard_input("ts:" + fifo_); }},
      {"hdf5 input", [&] { shard_input("hdf5:" + fifo_); }},
      {"audio manifest", [&] { io::read_audio_manifest(fifo_); }},
      {"idx file", [&] { io::read_idx(fifo_); }},
      {"whole-file reads", [&] { io::read_text_file(fifo_); }},
      {"file checksums", [&] { io::crc32_of_file(fifo_); }},
  };
  for (const auto& [what, read] : readers) EXPECT_EQ(outcome(read, fifo_, "a FIFO"), 0) << what;
  // --model.init-from, evaluate/predict/export --checkpoint: by suffix.
  for (const char* ext : {".ckpt", ".safetensors"})
    EXPECT_EQ(outcome([&] { read_weights(fifo_ + ext, ""); }, fifo_ + ext, "a FIFO"), 0) << ext;
}

TEST_F(NonRegularInputs, AFifoInsideADatasetOrRunIsRefusedToo) {
  // manifest.json of a dataset, metrics.jsonl of a sweep's run.
  const std::string data = dir_ + "/data";
  io::make_dirs(data);
  ASSERT_EQ(::mkfifo((data + "/manifest.json").c_str(), 0600), 0);
  EXPECT_EQ(outcome([&] { io::read_manifest(data); }, data + "/manifest.json", "a FIFO"), 0);
  const std::string run = dir_ + "/sweep/ranks-2";
  io::make_dirs(run);
  ASSERT_EQ(::mkfifo((run + "/metrics.jsonl").c_str(), 0600), 0);
  EXPECT_EQ(outcome([&] { io::read_sweep(dir_ + "/sweep"); }, run + "/metrics.jsonl", "a FIFO"), 0);
}

TEST_F(NonRegularInputs, DirectoriesAndDevicesAreNamedAsSuch) {
  EXPECT_EQ(outcome([&] { io::read_checkpoint(dir_); }, dir_, "a directory"), 0);
  EXPECT_EQ(outcome([&] { shard_input("csv:" + dir_); }, dir_, "a directory"), 0);
  ASSERT_EQ(::symlink("/dev/zero", (dir_ + "/zero.ckpt").c_str()), 0);
  EXPECT_EQ(outcome([&] { read_weights(dir_ + "/zero.ckpt", ""); }, dir_ + "/zero.ckpt", "a device"), 0);
  EXPECT_EQ(outcome([&] { io::read_safetensors("/dev/null"); }, "/dev/null", "a device"), 0);
  // A regular file passes, and a missing one is left to the reader's own message.
  io::write_file_atomic(dir_ + "/plain.txt", "x");
  EXPECT_NO_THROW(io::require_regular_file(dir_ + "/plain.txt"));
  EXPECT_NO_THROW(io::require_regular_file(dir_ + "/missing"));
}
