// shard_plan: which samples each rank reads, and how many steps an epoch has.
// Pure functions of (shard counts, rank, world size, batch): tested for many simulated
// ranks in one process.
//
// Rule (docs/shard-format.md, "Assignment"):
// 1. S >= W shards: rank r owns whole shards r, r+W, r+2W, ...
// 2. S <  W shards: the split's samples, concatenated in shard order, are cut into W
//    contiguous near-equal ranges; rank r reads range r (ranges may span shards).
// 3. Training steps per epoch are the same on every rank. "drop" (default): min over
//    ranks of floor(samples_r / batch); each rank's remainder is dropped for that epoch (a
//    different remainder each epoch, since the order is reshuffled). "wrap": max over
//    ranks of ceil(samples_r / batch); a rank that runs out continues from the start of
//    its epoch order, so every sample is seen at least once per epoch.
// 4. Evaluation reads every sample of the rank's ranges (nothing dropped).
#pragma once

#include <cstdint>
#include <vector>

namespace lockstep::io {

struct SampleRange {
  int shard = 0;
  int64_t begin = 0, end = 0;  // [begin, end) within the shard
  int64_t size() const { return end - begin; }
  bool operator==(const SampleRange& o) const {
    return shard == o.shard && begin == o.begin && end == o.end;
  }
};

std::vector<SampleRange> plan_rank_ranges(const std::vector<int64_t>& shard_counts, int rank,
                                          int world);
int64_t rank_sample_count(const std::vector<int64_t>& shard_counts, int rank, int world);
// Throws naming the rank when some rank has fewer samples than one batch (drop) or none
// at all (wrap).
int64_t steps_per_epoch(const std::vector<int64_t>& shard_counts, int world, int64_t batch, bool wrap = false);

}  // namespace lockstep::io
