// frame_table: see frame_table.hpp.
#include "io/dataset/frame_table.hpp"

#include <algorithm>
#include <cstring>

namespace lockstep::io {
namespace {

// Bytes of one channel plane of a frame (H x W values), and the channel count.
size_t plane_bytes(const DatasetSpec& spec) {
  return static_cast<size_t>(spec.sample_shape[2] * spec.sample_shape[3]) * dtype_size(spec.dtype);
}

}  // namespace

void clip_frame(const DatasetSpec& spec, const void* clip, int64_t t, void* out) {
  const int64_t channels = spec.sample_shape[0], frames = spec.clip_length();
  const size_t plane = plane_bytes(spec);
  const auto* src = static_cast<const unsigned char*>(clip);
  auto* dst = static_cast<unsigned char*>(out);
  for (int64_t c = 0; c < channels; ++c)
    std::memcpy(dst + static_cast<size_t>(c) * plane, src + static_cast<size_t>(c * frames + t) * plane, plane);
}

void assemble_clip(const DatasetSpec& spec, const unsigned char* const* frame, void* out) {
  const int64_t channels = spec.sample_shape[0], frames = spec.clip_length();
  const size_t plane = plane_bytes(spec);
  auto* dst = static_cast<unsigned char*>(out);
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t t = 0; t < frames; ++t)
      std::memcpy(dst + static_cast<size_t>(c * frames + t) * plane, frame[t] + static_cast<size_t>(c) * plane, plane);
}

std::vector<RowRun> row_runs(std::vector<int64_t> rows, int64_t gap) {
  std::sort(rows.begin(), rows.end());
  std::vector<RowRun> runs;
  for (const int64_t r : rows) {
    if (!runs.empty() && r < runs.back().end + gap + 1) {
      runs.back().end = std::max(runs.back().end, r + 1);
    } else {
      runs.push_back({r, r + 1});
    }
  }
  return runs;
}

void assemble_clips(const DatasetSpec& spec, const ClipBlock& block, int64_t n, void* out) {
  const int64_t t_len = spec.clip_length();
  const size_t fb = spec.frame_bytes();
  const auto frame_at = [&](int64_t row) {
    const auto k = static_cast<size_t>(std::upper_bound(block.runs.begin(), block.runs.end(), row,
                                                        [](int64_t v, const RowRun& r) { return v < r.begin; }) -
                                       block.runs.begin() - 1);
    return block.bytes.data() + block.run_at[k] + static_cast<size_t>(row - block.runs[k].begin) * fb;
  };
  std::vector<const unsigned char*> frame(static_cast<size_t>(t_len));
  auto* dst = static_cast<unsigned char*>(out);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t t = 0; t < t_len; ++t) frame[static_cast<size_t>(t)] = frame_at(block.rows[static_cast<size_t>(i * t_len + t)]);
    assemble_clip(spec, frame.data(), dst + static_cast<size_t>(i) * spec.sample_bytes());
  }
}

}  // namespace lockstep::io
