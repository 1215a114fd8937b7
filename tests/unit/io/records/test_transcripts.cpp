// The transcript file of `lockstep predict` for CTC models: CSV quoting, rows in order,
// the .h5's ragged log-probabilities, and nothing under the final name unless finished.
#include <gtest/gtest.h>
#include <hdf5.h>

#include "core/base/error.hpp"
#include "io/records/transcripts.hpp"
#include "io/util/file_util.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::io;
using namespace lockstep::testing;

namespace {

TranscriptFormat format(int64_t rows) {
  TranscriptFormat f;
  f.total = rows;
  f.classes = 4;  // 3 tokens + blank
  f.references = true;
  f.tokens = {"a", ",", "\""};
  f.checkpoint = "x.ckpt";
  f.split = "test";
  return f;
}

TranscriptRow row(int64_t index, std::vector<int64_t> hyp, std::vector<int64_t> ref, int64_t frames) {
  TranscriptRow r;
  r.index = index;
  r.hypothesis = std::move(hyp);
  r.reference = std::move(ref);
  r.frames = frames;
  for (int64_t k = 0; k < frames * 4; ++k) r.log_prob.push_back(-static_cast<float>(index * 100 + k));
  return r;
}

}  // namespace

TEST(Transcripts, CsvQuotesTextAndKeepsOrder) {
  const std::string dir = fresh_dir("tr");
  TranscriptWriter w(dir + "/t.csv", format(2));
  EXPECT_FALSE(w.wants_log_prob());
  w.append({row(0, {0, 0}, {0}, 0), row(1, {0, 1, 2}, {2}, 0)});
  EXPECT_FALSE(path_exists(dir + "/t.csv"));  // only at finish
  w.finish(0.5, 1.0);
  EXPECT_EQ(read_text_file(dir + "/t.csv"), "index,transcript,reference\n0,aa,a\n1,\"a,\"\"\",\"\"\"\"\n");
  EXPECT_EQ(token_text({0, 7, 1}, {"a", ","}), "a?,");
}

TEST(Transcripts, H5HoldsEveryRowsFramesOneAfterAnother) {
  const std::string dir = fresh_dir("tr5");
  {
    TranscriptWriter w(dir + "/t.h5", format(3));
    EXPECT_TRUE(w.wants_log_prob());
    w.append({row(0, {0}, {0}, 2)});
    w.append({row(1, {}, {1}, 1), row(2, {2}, {2}, 3)});
    w.finish(0.25, 0.5);
  }
  const hid_t f = H5Fopen((dir + "/t.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t lp = H5Dopen2(f, "log_prob", H5P_DEFAULT);
  const hid_t space = H5Dget_space(lp);
  hsize_t dims[2];
  H5Sget_simple_extent_dims(space, dims, nullptr);
  EXPECT_EQ(dims[0], 6u);  // 2 + 1 + 3 frames
  EXPECT_EQ(dims[1], 4u);
  std::vector<float> v(24);
  H5Dread(lp, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  EXPECT_EQ(v[8], -100.0f);   // row 1's first frame follows row 0's two
  EXPECT_EQ(v[12], -200.0f);  // row 2's
  H5Sclose(space);
  H5Dclose(lp);
  H5Fclose(f);
}

TEST(Transcripts, AnUnfinishedFileIsNotLeftBehind) {
  const std::string dir = fresh_dir("tr0");
  {
    TranscriptWriter w(dir + "/t.h5", format(2));
    w.append({row(0, {0}, {0}, 1)});
  }
  EXPECT_FALSE(path_exists(dir + "/t.h5"));
  EXPECT_EQ(list_dir(dir).size(), 0u);
  EXPECT_THROW(TranscriptWriter(dir + "/t.txt", format(1)), UsageError);
}
