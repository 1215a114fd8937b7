// Frame tables (shard format v3): a clip cut into frames and assembled again is the same
// bytes; the reader's runs of frame rows cover every row needed, merged across small gaps.
#include <gtest/gtest.h>

#include <numeric>

#include "io/dataset/frame_table.hpp"

using namespace lockstep::io;

TEST(FrameTable, ClipToFramesAndBackIsTheSameBytes) {
  DatasetSpec spec;
  spec.sample_shape = {3, 5, 2, 4};  // C, T, H, W
  spec.frame_table = true;
  ASSERT_EQ(spec.frame_bytes(), 3u * 2 * 4);
  std::vector<unsigned char> clip(spec.sample_bytes());
  std::iota(clip.begin(), clip.end(), 0);
  std::vector<std::vector<unsigned char>> frames(5, std::vector<unsigned char>(spec.frame_bytes()));
  for (int64_t t = 0; t < 5; ++t) clip_frame(spec, clip.data(), t, frames[static_cast<size_t>(t)].data());
  // Frame t, channel c is the plane at [c, t] of the clip.
  EXPECT_EQ(frames[2][0], (0 * 5 + 2) * 8);
  EXPECT_EQ(frames[2][8], (1 * 5 + 2) * 8);
  EXPECT_EQ(frames[4][23], (2 * 5 + 4) * 8 + 7);
  std::vector<const unsigned char*> ptr;
  for (const auto& f : frames) ptr.push_back(f.data());
  std::vector<unsigned char> back(spec.sample_bytes());
  assemble_clip(spec, ptr.data(), back.data());
  EXPECT_EQ(back, clip);
  // A clip of one frame repeated (a padded edge) assembles from one frame T times.
  std::vector<const unsigned char*> same(5, frames[0].data());
  assemble_clip(spec, same.data(), back.data());
  for (int64_t t = 0; t < 5; ++t) EXPECT_EQ(back[static_cast<size_t>(t) * 8], clip[0]);
}

TEST(FrameTable, RowRunsCoverEveryRowAndMergeSmallGaps) {
  const auto text = [](const std::vector<RowRun>& runs) {
    std::string s;
    for (const RowRun& r : runs) s += "[" + std::to_string(r.begin) + "," + std::to_string(r.end) + ")";
    return s;
  };
  EXPECT_EQ(text(row_runs({9, 1, 2, 3, 3, 5}, 0)), "[1,4)[5,6)[9,10)");
  EXPECT_EQ(text(row_runs({9, 1, 2, 3, 3, 5}, 1)), "[1,6)[9,10)");
  EXPECT_EQ(text(row_runs({9, 1, 2, 3, 3, 5}, 5)), "[1,10)");
  EXPECT_EQ(text(row_runs({}, 4)), "");
}
