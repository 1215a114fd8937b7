// ClipShard + the v3 reader: clips written as a frame table read back byte-identical to the
// same clips written whole, in the planned order, with each distinct frame stored once; a
// frame whose twin left the lookup window is stored again (disk, not correctness); a clip
// row outside the frames is refused by the writer and by the reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "io/dataset/shard_reader.hpp"
#include "io/dataset/shard_writer.hpp"
#include "io/import/clip_shard.hpp"
#include "io/util/h5.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::io;
using namespace lockstep::testing;

namespace {

DatasetSpec frame_clip_spec(bool frame_table) {
  DatasetSpec s;
  s.name = "clips";
  s.sample_shape = {2, 5, 3, 4};  // C, T, H, W
  s.dtype = DType::kUInt8;
  s.num_classes = 3;
  s.mean = {0.0, 0.0};
  s.std = {1.0, 1.0};
  s.frame_table = frame_table;
  return s;
}

// A video of F random frames and a clip centred on each of its frames (edges padded with
// the first/last frame, as the video importer does), labelled f % 3.
struct Clips {
  std::vector<unsigned char> bytes;
  std::vector<int64_t> labels;
  int64_t count = 0;
};
Clips video_clips(const DatasetSpec& spec, int64_t frames, uint32_t seed) {
  std::mt19937 rng(seed);
  const size_t fb = spec.frame_bytes();
  std::vector<unsigned char> video(static_cast<size_t>(frames) * fb);
  for (auto& b : video) b = static_cast<unsigned char>(rng());
  const int64_t t_len = spec.clip_length(), c_len = spec.sample_shape[0];
  const size_t plane = fb / static_cast<size_t>(c_len);
  Clips c;
  for (int64_t f = 0; f < frames; ++f) {
    const size_t at = c.bytes.size();
    c.bytes.resize(at + spec.sample_bytes());
    for (int64_t ch = 0; ch < c_len; ++ch)
      for (int64_t t = 0; t < t_len; ++t) {
        const int64_t src = std::clamp<int64_t>(f - t_len / 2 + t, 0, frames - 1);
        std::copy_n(video.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(src) * fb + static_cast<size_t>(ch) * plane),
                    plane, c.bytes.begin() + static_cast<std::ptrdiff_t>(at + static_cast<size_t>(ch * t_len + t) * plane));
      }
    c.labels.push_back(f % 3);
  }
  c.count = frames;
  return c;
}

std::vector<unsigned char> read_back(const std::string& path, const DatasetSpec& spec, const ShardEntry& e,
                                     std::vector<int64_t>* labels) {
  ShardFile f(path, spec, &e);
  std::vector<unsigned char> out(spec.sample_bytes() * static_cast<size_t>(f.count()));
  labels->assign(static_cast<size_t>(f.count()), 0);
  // In uneven pieces, so runs start and end mid-shard.
  for (int64_t at = 0; at < f.count(); at += 7) {
    const int64_t n = std::min<int64_t>(7, f.count() - at);
    f.read(at, n, out.data() + static_cast<size_t>(at) * spec.sample_bytes(), labels->data() + at);
  }
  return out;
}

}  // namespace

TEST(ClipShard, FrameTableReadsAsTheWholeClipsInThePlannedOrder) {
  const std::string dir = fresh_dir("clipshard");
  const DatasetSpec whole = frame_clip_spec(false), table = frame_clip_spec(true);
  const Clips c = video_clips(whole, 40, 1);
  // Stored order: a permutation of the clips added in source order.
  std::vector<int64_t> position(static_cast<size_t>(c.count));
  for (size_t i = 0; i < position.size(); ++i) position[i] = static_cast<int64_t>((i * 17) % position.size());
  std::vector<unsigned char> stored(c.bytes.size());
  std::vector<int64_t> stored_labels(c.labels.size());
  for (int64_t j = 0; j < c.count; ++j) {
    const auto p = static_cast<size_t>(position[static_cast<size_t>(j)]);
    std::copy_n(c.bytes.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(j) * whole.sample_bytes()),
                whole.sample_bytes(), stored.begin() + static_cast<std::ptrdiff_t>(p * whole.sample_bytes()));
    stored_labels[p] = c.labels[static_cast<size_t>(j)];
  }

  ShardWriter ww(dir, "whole", 0, 1, whole, c.count, WriteOptions{});
  ww.append(stored.data(), stored_labels.data(), c.count);
  const ShardEntry we = ww.finish();
  ww.commit();
  ShardWriter tw(dir, "table", 0, 1, table, c.count, WriteOptions{});
  ClipShard cs(table, tw, position);
  for (int64_t j = 0; j < c.count; ++j)
    cs.add(c.bytes.data() + static_cast<size_t>(j) * table.sample_bytes(), &c.labels[static_cast<size_t>(j)]);
  cs.drain();
  const ShardEntry te = tw.finish();
  tw.commit();

  EXPECT_EQ(te.frames, 40);  // each distinct frame once: the padded edges are the first/last frame again
  EXPECT_EQ(te.histogram, we.histogram);
  std::vector<int64_t> wl, tl;
  const auto wb = read_back(dir + "/" + we.file, whole, we, &wl);
  const auto tb = read_back(dir + "/" + te.file, table, te, &tl);
  EXPECT_EQ(tb, wb);
  EXPECT_EQ(tb, stored);
  EXPECT_EQ(tl, stored_labels);
  const ShardHeader h = read_shard_header(dir + "/" + te.file);
  EXPECT_TRUE(h.spec.frame_table);
  EXPECT_EQ(h.samples, 40);
  EXPECT_EQ(h.frames, 40);
}

TEST(ClipShard, AFrameOutsideTheWindowIsStoredAgainAndStillReadsRight) {
  const std::string dir = fresh_dir("clipwindow");
  const DatasetSpec table = frame_clip_spec(true);
  const Clips a = video_clips(table, 12, 2), b = video_clips(table, 12, 3);
  // a's clips, b's clips, then a's first clip again: its frames left the smallest window.
  std::vector<unsigned char> bytes = a.bytes;
  bytes.insert(bytes.end(), b.bytes.begin(), b.bytes.end());
  bytes.insert(bytes.end(), a.bytes.begin(), a.bytes.begin() + static_cast<std::ptrdiff_t>(table.sample_bytes()));
  std::vector<int64_t> labels(25, 1);
  ShardWriter w(dir, "train", 0, 1, table, 25, WriteOptions{});
  ClipShard cs(table, w, {}, /*window_bytes=*/1);  // the smallest window: 2T + 1 frames
  for (int64_t j = 0; j < 25; ++j) cs.add(bytes.data() + static_cast<size_t>(j) * table.sample_bytes(), &labels[0]);
  cs.drain();
  const ShardEntry e = w.finish();
  w.commit();
  EXPECT_EQ(e.frames, 12 + 12 + 3);  // a's clip 0 needs a's frames 0-2 again
  std::vector<int64_t> got_labels;
  EXPECT_EQ(read_back(dir + "/" + e.file, table, e, &got_labels), bytes);
}

TEST(ClipShard, ClipRowsOutsideTheFramesAreRefused) {
  const std::string dir = fresh_dir("cliprows");
  const DatasetSpec table = frame_clip_spec(true);
  ShardWriter w(dir, "train", 0, 1, table, 2, WriteOptions{});
  std::vector<unsigned char> frames(table.frame_bytes() * 3, 7);
  EXPECT_EQ(w.append_frames(frames.data(), 3), 0);
  const std::vector<int32_t> bad{0, 1, 2, 3, 0};
  const int64_t label = 0;
  EXPECT_ERROR_CONTAINS(w.append_clips(bad.data(), &label, 1), "names frame row 3 of 3 written");
  EXPECT_ERROR_CONTAINS(w.append(frames.data(), &label, 1), "a frame table takes frames and clip rows");
  const std::vector<int32_t> rows{0, 1, 2, 2, 2, 2, 1, 0, 0, 0};
  const std::vector<int64_t> labels{0, 2};
  w.append_clips(rows.data(), labels.data(), 2);
  const ShardEntry e = w.finish();
  w.commit();
  // A row changed after the import (rewritten through HDF5, so its chunk checksum is new).
  {
    H5Handle f(H5Fopen((dir + "/" + e.file).c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    H5Handle d(H5Dopen2(f.get(), kClipFramesDataset, H5P_DEFAULT));
    const std::vector<int32_t> changed{0, 1, 2, 2, 2, 2, 1, 0, 0, 99};
    ASSERT_GE(H5Dwrite(d.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, changed.data()), 0);
  }
  ShardFile r(dir + "/" + e.file, table);
  std::vector<unsigned char> out(table.sample_bytes() * 2);
  std::vector<int64_t> got(2);
  EXPECT_ERROR_CONTAINS(r.read(0, 2, out.data(), got.data()), "clip 1 names frame row 99, outside the shard's 3 frames");
  r.read(0, 1, out.data(), got.data());  // clip 0 is intact
  EXPECT_EQ(got[0], 0);
}
