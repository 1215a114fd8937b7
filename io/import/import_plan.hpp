// import_plan: which source samples go to which split and shard. A pure function of the
// labels and the options, tested in one process.
//
// 1. Order: source order, or a permutation seeded by (seed, split) when shuffling.
// 2. --limit N keeps the first N of that order.
// 3. Validation (stratified): from each class, the first round(fraction * class count)
//    samples of that order go to the validation split; the rest stay. With GROUPS
//    (subject, speaker, trial ids) whole groups move instead: in a seeded order, each group
//    that brings validation closer to round(fraction * samples) (at least one group; at
//    least one stays): no group is in two splits. Not stratified by class: groups carry
//    several classes (`lockstep inspect DATASET` shows each split's class histogram).
// 4. Each split's list is cut into contiguous near-equal ranges, one per shard
//    (min(shards, samples) shards). A shard is written in the order of its list: when
//    shuffling, a seeded random order, so that any contiguous range of a shard (what a
//    rank reads when there are fewer shards than ranks) is an unbiased sample of the split
//    even when the source is sorted by class or subject; without shuffling, source order.
//    source_runs R > 0 (video clips stored as frame tables: neighbouring clips share
//    frames): the list, in source order, is cut into runs of about R consecutive samples
//    (at least one per shard, at most 64 per shard), the runs are dealt to the shards in a
//    seeded random order, and each shard stores its samples in a seeded random order. A
//    shard then holds whole runs (their frames stored once; a frame twice only where two
//    neighbouring runs went to different shards) and is still a fair sample of its split
//    at the granularity of runs, not of videos.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::io {

struct PlanOptions {
  int shards = 1;
  double val_fraction = 0.0;
  bool shuffle = true;
  uint64_t seed = 0;
  int64_t limit = 0;  // 0: all
  int64_t source_runs = 0;  // > 0: step 4 deals runs of this many consecutive samples (above)
};

struct SplitAssignment {
  std::string split;
  std::vector<std::vector<int64_t>> shards;  // source indices, in the order each shard stores them
  int64_t count() const;
};

// Plans SPLIT (and "val" when options.val_fraction > 0) from LABELS (and GROUPS: empty,
// or one id per sample). SOURCE names the input in errors.
std::vector<SplitAssignment> plan_import(const std::vector<int64_t>& labels, int64_t num_classes,
                                         const std::string& split, const PlanOptions& options,
                                         const std::vector<int64_t>& groups = {}, const std::string& source = "");

}  // namespace lockstep::io
