// clip_shard: see clip_shard.hpp.
#include "io/import/clip_shard.hpp"

#include <algorithm>
#include <cstring>
#include <functional>

#include "core/base/error.hpp"
#include "io/dataset/frame_table.hpp"
#include "io/dataset/shard_writer.hpp"

namespace lockstep::io {

ClipShard::ClipShard(const DatasetSpec& spec, ShardWriter& out, std::vector<int64_t> position, size_t window_bytes)
    : spec_(spec), out_(out), position_(std::move(position)), frame_bytes_(spec.frame_bytes()) {
  LOCKSTEP_REQUIRE(spec.frame_table && frame_bytes_ > 0, out.final_path() + ": ClipShard on a dataset that is not a "
                                                                           "frame table");
  const size_t t_len = static_cast<size_t>(spec.clip_length());
  window_ = std::min(4 * t_len + 1, std::max(2 * t_len + 1, window_bytes / frame_bytes_));
  frame_.resize(frame_bytes_);
}

int64_t ClipShard::frame_row(const unsigned char* frame) {
  const uint64_t h = std::hash<std::string_view>{}(std::string_view(reinterpret_cast<const char*>(frame), frame_bytes_));
  const auto [lo, hi] = by_hash_.equal_range(h);
  for (auto it = lo; it != hi; ++it)
    if (std::memcmp(ring_.data() + it->second * frame_bytes_, frame, frame_bytes_) == 0) return ring_row_[it->second];
  // A new frame: stored, and remembered in the ring slot of the oldest one.
  const size_t slot = ring_next_;
  ring_next_ = (ring_next_ + 1) % window_;
  if (ring_used_ == window_) {
    const auto [olo, ohi] = by_hash_.equal_range(ring_hash_[slot]);
    for (auto it = olo; it != ohi; ++it)
      if (it->second == slot) {
        by_hash_.erase(it);
        break;
      }
  } else {  // the ring grows as it fills
    ++ring_used_;
    ring_.resize(ring_used_ * frame_bytes_);
    ring_row_.push_back(-1);
    ring_hash_.push_back(0);
  }
  std::memcpy(ring_.data() + slot * frame_bytes_, frame, frame_bytes_);
  const int64_t row = stored_ + pending_;
  LOCKSTEP_REQUIRE(row < int64_t{INT32_MAX}, out_.final_path() + ": over 2^31 distinct frames in one shard: "
                                             "import into more --shards");
  ring_row_[slot] = row;
  ring_hash_[slot] = h;
  by_hash_.emplace(h, slot);
  pending_bytes_.insert(pending_bytes_.end(), frame, frame + frame_bytes_);
  ++pending_;
  if (pending_bytes_.size() >= (size_t{1} << 20)) flush_frames();
  return row;
}

void ClipShard::flush_frames() {
  if (pending_ == 0) return;
  LOCKSTEP_REQUIRE(out_.append_frames(pending_bytes_.data(), pending_) == stored_,
                   out_.final_path() + ": frames appended out of step with their rows");
  stored_ += pending_;
  pending_ = 0;
  pending_bytes_.clear();
}

void ClipShard::add(const void* clip, const int64_t* record) {
  const int64_t t_len = spec_.clip_length();
  for (int64_t t = 0; t < t_len; ++t) {
    clip_frame(spec_, clip, t, frame_.data());
    rows_.push_back(static_cast<int32_t>(frame_row(frame_.data())));
  }
  records_.insert(records_.end(), record, record + spec_.record_width());
  ++clips_;
}

void ClipShard::drain() {
  flush_frames();
  by_hash_.clear();  // the window is not needed any more
  std::vector<unsigned char>().swap(ring_);
  const int64_t t_len = spec_.clip_length(), w = spec_.record_width();
  LOCKSTEP_REQUIRE(position_.empty() || static_cast<int64_t>(position_.size()) == clips_,
                   out_.final_path() + ": " + std::to_string(clips_) + " clips added, " +
                       std::to_string(position_.size()) + " planned");
  std::vector<int32_t> rows(rows_.size());
  std::vector<int64_t> records(records_.size());
  for (int64_t j = 0; j < clips_; ++j) {
    const int64_t p = position_.empty() ? j : position_[static_cast<size_t>(j)];
    std::copy_n(rows_.begin() + j * t_len, t_len, rows.begin() + p * t_len);
    std::copy_n(records_.begin() + j * w, w, records.begin() + p * w);
  }
  const int64_t slice = 4096;
  for (int64_t i = 0; i < clips_; i += slice)
    out_.append_clips(rows.data() + i * t_len, records.data() + i * w, std::min(slice, clips_ - i));
}

}  // namespace lockstep::io
