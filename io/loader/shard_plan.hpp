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
// 5. Training re-deals the split every epoch (deal_rank_ranges), so that no rank sees the
//    same subset in every epoch, whatever the shard count: the split is cut into units of
//    UNIT consecutive samples of one shard, the units are permuted by (seed, epoch) alone
//    (the same permutation on every rank) and concatenated, and rank r takes positions
//    [T*r/W, T*(r+1)/W) of that sequence (T samples in the split). Every rank gets the
//    same count in every epoch (dealt_sample_count), ranks are disjoint and together
//    read the whole split. UNIT 1 is a uniform random deal, as PyTorch's
//    DistributedSampler makes (memory mode); larger units keep reads sequential (stream).
#pragma once

#include <cstdint>
#include <string>
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
// Rule 5: this epoch's ranges of RANK, in visiting order of the dealt sequence.
std::vector<SampleRange> deal_rank_ranges(const std::vector<int64_t>& shard_counts, int64_t unit, uint64_t seed,
                                          int64_t epoch, int rank, int world);
int64_t dealt_sample_count(const std::vector<int64_t>& shard_counts, int rank, int world);
// Throws naming the rank when some rank has fewer samples than one batch (drop) or none
// at all (wrap). DEALT: the shares of rule 5 instead of rules 1-2.
int64_t steps_per_epoch(const std::vector<int64_t>& shard_counts, int world, int64_t batch, bool wrap = false,
                        bool dealt = false);
// Rules 1-2's fixed shares in training (a reader that does not re-deal): what unequal shares
// cost an epoch, "" when they are within one batch of each other. Drop: every rank trains the
// smallest share's step count, so "each epoch trains 704 of the split's 900 samples (22% left
// out ...)"; wrap: the smaller shares repeat. (Found by a hostile tester: 5 shards on 4 ranks
// left 22% of the split out of every epoch, silently.)
std::string fixed_share_note(const std::vector<int64_t>& shard_counts, int world, int64_t batch, bool wrap);

}  // namespace lockstep::io
