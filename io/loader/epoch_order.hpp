// epoch_order: the order in which a rank visits its samples in one epoch, for both reader
// modes. Pure functions of (the rank's ranges, seed, epoch, rank, block sizes): tested in
// one process, and a resumed run replays the same order.
//
// Memory mode: a uniform permutation of the rank's samples (sample_order.hpp).
// Streaming mode (data larger than the memory budget):
// 1. the rank's ranges are cut into blocks of BLOCK consecutive samples (one read each);
// 2. the blocks are permuted by (seed, epoch, rank);
// 3. consecutive groups of GROUP blocks form a shuffle window: the reader loads a whole
//    group and visits its samples in an order permuted by (seed, epoch, rank, group).
// Sequential reads of ~MiB blocks, yet every epoch sees a different order.
// Evaluation visits samples in their natural order (shuffle = false).
// Length bucketing (ragged data in memory, training), a pure function too:
// 1. the memory-mode permutation;
// 2. cut into windows of WINDOW x BATCH positions, each sorted by sample length (stable);
// 3. each window cut into batches of BATCH; all full batches of the epoch permuted by
//    (seed, epoch, rank), the remainder (n mod BATCH samples) kept last.
// A batch then holds samples of similar length (little padding), batches of all lengths
// still come in random order, every epoch differs, and each rank's step count is the
// one the shard plan fixed (bucketing only reorders a rank's own samples).
#pragma once

#include <cstdint>
#include <vector>

#include "io/loader/shard_plan.hpp"

namespace lockstep::io {

struct Block {
  int shard = 0;
  int64_t begin = 0, end = 0;  // within the shard
  int64_t local = 0;           // rank-local index of its first sample
  int64_t size() const { return end - begin; }
};

struct EpochOrder {
  std::vector<int64_t> ids;                  // rank-local sample ids, in visiting order
  std::vector<std::vector<Block>> groups;    // streaming: the blocks each group reads
  std::vector<int64_t> group_start;          // streaming: first position of each group, + end
  bool streaming() const { return !groups.empty(); }
};

std::vector<Block> make_blocks(const std::vector<SampleRange>& ranges, int64_t block);

EpochOrder memory_order(int64_t n, bool shuffle, uint64_t seed, int64_t epoch, int rank);
EpochOrder bucketed_order(const std::vector<int64_t>& lengths, int64_t batch, int64_t window, uint64_t seed,
                          int64_t epoch, int rank);
EpochOrder streaming_order(const std::vector<SampleRange>& ranges, int64_t block, int64_t group, bool shuffle,
                           uint64_t seed, int64_t epoch, int rank);

}  // namespace lockstep::io
