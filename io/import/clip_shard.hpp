// clip_shard: one shard of video clips written as a frame table (shard_format.hpp, v3):
// every distinct frame once, each clip as T rows of them.
//
// The import meets a shard's clips in source order (import_plan.hpp: with source_runs a
// shard is a run of consecutive clips), so a frame's repeats — the overlap of neighbouring
// clips, a padded edge frame — come close together. add() cuts each clip into its T frames
// and looks each one up among the last distinct frames it stored (a hash, then the bytes
// compared: a frame is shared only when it is byte-identical); a new frame is appended to
// the shard at once, in ~1 MiB slices. The window holds 4T+1 frames (a clip's neighbours
// within a run share all but their stride's frames; fewer, down to 2T+1, when that is over
// WINDOW_BYTES), allocated as it fills and freed at drain(): the import holds one per shard.
// A frame whose twin left the window is stored again: the cost is disk, never a wrong clip.
// The clips' rows and label records (small) stay in memory and are written at drain(), in
// the shard's planned order.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/dataset/shard_format.hpp"

namespace lockstep::io {

class ShardWriter;

class ClipShard {
 public:
  // POSITION[j]: the planned (stored) position of the j-th clip added; empty: the same order.
  // WINDOW_BYTES bounds the frames held for the lookup (at least 2T + 1 frames are held).
  ClipShard(const DatasetSpec& spec, ShardWriter& out, std::vector<int64_t> position,
            size_t window_bytes = size_t{16} << 20);
  ClipShard(const ClipShard&) = delete;
  ClipShard& operator=(const ClipShard&) = delete;

  void add(const void* clip, const int64_t* record);
  void drain();  // after every clip was added: frames flushed, clip rows written in stored order
  int64_t clips() const { return clips_; }
  int64_t frames() const { return stored_ + pending_; }  // distinct frames stored (or about to be)

 private:
  int64_t frame_row(const unsigned char* frame);  // the row of an identical frame, or a new one's
  void flush_frames();

  DatasetSpec spec_;
  ShardWriter& out_;
  std::vector<int64_t> position_;
  size_t frame_bytes_ = 0, window_ = 0;
  int64_t clips_ = 0, stored_ = 0, pending_ = 0;
  std::vector<unsigned char> pending_bytes_;  // frames not yet appended to OUT
  // The window: a ring of the last WINDOW_ distinct frames (bytes, row), found by hash.
  std::vector<unsigned char> ring_;
  std::vector<int64_t> ring_row_;
  std::vector<uint64_t> ring_hash_;
  size_t ring_next_ = 0, ring_used_ = 0;
  std::unordered_multimap<uint64_t, size_t> by_hash_;  // hash -> ring slot
  std::vector<unsigned char> frame_;                    // one frame cut from a clip
  std::vector<int32_t> rows_;                           // T per clip, in add() order
  std::vector<int64_t> records_;                        // record_width() per clip
};

}  // namespace lockstep::io
