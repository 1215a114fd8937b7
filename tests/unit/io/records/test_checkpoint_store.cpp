// Checkpoint files: atomic, verified, newest-valid selection, pruning.
#include <gtest/gtest.h>

#include <fstream>

#include "io/records/checkpoint_store.hpp"
#include "io/util/file_util.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::io;
using namespace lockstep::testing;

TEST(CheckpointStore, RoundTrip) {
  const std::string dir = fresh_dir("ck");
  const std::string payload(100000, '\x7f');
  const std::string path = write_checkpoint(dir, 12, "{\"step\": 12}", payload);
  EXPECT_EQ(path, dir + "/step-000000012.ckpt");
  const CheckpointData d = read_checkpoint(path);
  EXPECT_EQ(d.meta_json, "{\"step\": 12}");
  EXPECT_EQ(d.payload, payload);
  for (const auto& name : list_dir(dir)) EXPECT_EQ(name.find(".tmp"), std::string::npos) << name;
}

TEST(CheckpointStore, CorruptionIsDetected) {
  const std::string dir = fresh_dir("corrupt");
  const std::string path = write_checkpoint(dir, 1, "{}", std::string(1000, 'a'));
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(500);
    f.put('b');
  }
  EXPECT_ERROR_CONTAINS(read_checkpoint(path), "checksum mismatch");
  ASSERT_EQ(::truncate(path.c_str(), 100), 0);
  EXPECT_ERROR_CONTAINS(read_checkpoint(path), "truncated checkpoint");
  // Bytes appended are no truncation (a hostile finding: it was called one).
  const std::string longer = write_checkpoint(dir, 2, "{}", std::string(1000, 'a'));
  std::ofstream(longer, std::ios::app | std::ios::binary) << "appended";
  EXPECT_ERROR_CONTAINS(read_checkpoint(longer), "corrupt checkpoint: longer than its header says");
  std::ofstream(path) << "garbage that is long enough to have a header......";
  EXPECT_ERROR_CONTAINS(read_checkpoint(path), "bad magic");
}

TEST(CheckpointStore, LatestValidFallsBackPastACorruptNewest) {
  const std::string dir = fresh_dir("fallback");
  EXPECT_EQ(find_latest_valid_checkpoint(dir, nullptr), "");
  write_checkpoint(dir, 5, "{}", "five");
  write_checkpoint(dir, 10, "{}", "ten");
  const std::string newest = write_checkpoint(dir, 15, "{}", "fifteen");
  std::ofstream(dir + "/step-000000020.ckpt.tmp.999") << "a temp file from a crashed writer";
  ASSERT_EQ(::truncate(newest.c_str(), 20), 0);
  std::vector<std::string> skipped;
  EXPECT_EQ(find_latest_valid_checkpoint(dir, &skipped), dir + "/step-000000010.ckpt");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("step-000000015.ckpt"), std::string::npos);
}

// Issue 31 (13): lengths whose sum wraps 2^64 to the file's size passed the size check
// and threw a raw length_error, which --resume auto does not skip.
TEST(CheckpointStore, HeaderLengthsThatWrapAreTruncationNotACrash) {
  const std::string dir = fresh_dir("wrap");
  write_checkpoint(dir, 5, "{}", "five");
  const std::string newest = write_checkpoint(dir, 6, "{}", "six!");
  const auto put = [&](long at, uint64_t v) {
    std::fstream f(newest, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(at);
    for (int i = 0; i < 8; ++i) f.put(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  const uint64_t body = 2 + 4;  // "{}" + "six!"
  for (const uint64_t meta : {~uint64_t{0} - 9, ~uint64_t{0}, uint64_t{1} << 63}) {
    put(8, meta);
    put(16, body - meta);  // meta + payload wraps to BODY
    EXPECT_ERROR_CONTAINS(read_checkpoint(newest), "truncated checkpoint");
    std::vector<std::string> skipped;
    EXPECT_EQ(find_latest_valid_checkpoint(dir, &skipped), dir + "/step-000000005.ckpt");
    EXPECT_EQ(skipped.size(), 1u);
  }
  // A name whose step does not fit (a bare std::stoll threw out_of_range) is no checkpoint.
  std::ofstream(dir + "/step-123456789012345678901234.ckpt") << "x";
  EXPECT_EQ(list_checkpoints(dir).size(), 2u);
  EXPECT_EQ(find_latest_valid_checkpoint(dir, nullptr), dir + "/step-000000005.ckpt");
}

TEST(CheckpointStore, ListingOrdersByStepAndPruneKeepsNewest) {
  const std::string dir = fresh_dir("prune");
  for (const int64_t step : {300, 20, 1000, 4}) write_checkpoint(dir, step, "{}", "x");
  const auto all = list_checkpoints(dir);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all.front().first, 4);
  EXPECT_EQ(all.back().first, 1000);
  prune_checkpoints(dir, 2);
  const auto kept = list_checkpoints(dir);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].first, 300);
  EXPECT_EQ(kept[1].first, 1000);
}

TEST(FileUtil, AtomicWriteReplacesWholeFile) {
  const std::string dir = fresh_dir("atomic");
  write_file_atomic(dir + "/a.txt", "first version, longer");
  write_file_atomic(dir + "/a.txt", "second");
  EXPECT_EQ(read_text_file(dir + "/a.txt"), "second");
  EXPECT_EQ(list_dir(dir), (std::vector<std::string>{"a.txt"}));
  EXPECT_ERROR_CONTAINS(write_file_atomic(dir + "/no/such/dir/x", "y"), "cannot write");
}
