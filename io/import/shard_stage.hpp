// shard_stage: writes a shard in a planned order other than the order the import pass
// meets its samples in, with bounded memory.
//
// The import reads its source once, sequentially; a shuffled shard must be stored in a
// random order (import_plan.hpp, step 4) that differs from that pass order. So:
// 1. append(): the samples and label records are appended, in pass order, to a raw
//    staging file beside the shard (SHARD.stage's marked temp file: removed by the destructor, and
//    as a temp file by the next import if a kill leaves it);
// 2. drain(): the planned positions are cut into windows of at most WINDOW_BYTES; for each
//    window the staging file is read once, sequentially, each sample whose planned
//    position falls in the window is copied to it, and the window is appended to the
//    ShardWriter. One window (the usual case) reads the staging file once; a shard larger
//    than the window costs one sequential read per window, never more memory.
// Every read and write error names the staging file and the system's reason (ENOSPC:
// "No space left on device").
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace lockstep::io {

class ShardWriter;

class StagedShard {
 public:
  // POSITION[j]: the planned position of the j-th sample appended; a permutation of
  // [0, POSITION.size()).
  StagedShard(std::string path, size_t sample_bytes, int64_t record_width, std::vector<int64_t> position,
              size_t window_bytes);
  ~StagedShard();
  StagedShard(const StagedShard&) = delete;
  StagedShard& operator=(const StagedShard&) = delete;

  void append(const void* samples, const int64_t* records, int64_t n);
  void drain(ShardWriter& out);  // after every sample was appended; removes the staging file

 private:
  void close_and_remove();

  std::string path_;
  size_t sample_bytes_;
  int64_t record_width_;
  std::vector<int64_t> position_;
  size_t window_bytes_;
  int64_t appended_ = 0;
  std::FILE* file_ = nullptr;
};

}  // namespace lockstep::io
