// frame_table: the v3 layout of video clips (shard_format.hpp). A clip [C, T, H, W] is T
// frames [C, H, W]; a shard stores its distinct frames once (/frames) and each clip's T
// rows of them (/clip_frames). These are the byte-level pieces the writer and the reader
// share: pure functions, tested without files.
#pragma once

#include <cstdint>
#include <vector>

#include "io/dataset/shard_format.hpp"

namespace lockstep::io {

// Frame T of CLIP (one [C, T, H, W] sample of SPEC) into OUT (spec.frame_bytes()).
void clip_frame(const DatasetSpec& spec, const void* clip, int64_t t, void* out);

// OUT (one [C, T, H, W] sample) from its T frames: FRAME[t] points at frame t ([C, H, W]).
void assemble_clip(const DatasetSpec& spec, const unsigned char* const* frame, void* out);

// Rows [begin, end) of /frames to read for ROWS (any order, repeats allowed): sorted,
// merged where the gap between two needed rows is at most GAP rows (one read instead of two).
struct RowRun {
  int64_t begin = 0, end = 0;
};
std::vector<RowRun> row_runs(std::vector<int64_t> rows, int64_t gap);

// A block of clips as the reader fetched it: each clip's T frame ROWS, and the frames of
// RUNS, read one after another into BYTES (run k from byte RUN_AT[k]).
struct ClipBlock {
  std::vector<int32_t> rows;
  std::vector<RowRun> runs;
  std::vector<size_t> run_at;
  std::vector<unsigned char> bytes;
};
// The block's N clips into OUT ([C, T, H, W] each); every row lies in one of the runs.
void assemble_clips(const DatasetSpec& spec, const ClipBlock& block, int64_t n, void* out);

}  // namespace lockstep::io
