// rank_reader: a rank's share of one split, readable in two modes behind one interface.
//
// memory: the whole share is loaded at open (fast random access, costs RAM);
// stream:  shards stay on disk, samples are read in blocks (epoch_order.hpp).
// auto picks memory when the share fits --data.memory-budget-mb, else stream.
// A training reader (ReaderOptions::redeal) takes a new share of the split every epoch
// (shard_plan.hpp, rule 5), the same count each epoch:
// - memory: the whole split is loaded when it fits the budget, and each epoch deals it
//   sample by sample (unit 1, like DistributedSampler); when only the rank's share fits
//   (--data.mode memory with a split over the budget), the share stays the same every
//   epoch (dealt() is false) and is reshuffled within;
// - stream: each epoch deals blocks of the stream block size; auto streams when the
//   whole split does not fit the budget.
// Evaluation readers keep the fixed plan (rules 1-2) and visit it in natural order.
// fill() copies the samples at visiting positions [pos, pos+n) of an EpochOrder; positions
// past the end wrap around (the "wrap" remainder rule). A StreamCache carries the loaded
// shuffle window between calls; it belongs to the thread that calls fill(), which reads a
// window's blocks together with read_threads - 1 threads it starts for them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/loader/epoch_order.hpp"
#include "io/loader/sample_store.hpp"
#include "io/dataset/shard_format.hpp"
#include "io/dataset/shard_reader.hpp"

namespace lockstep::io {

enum class ReadMode { kAuto, kMemory, kStream };

struct ReaderOptions {
  ReadMode mode = ReadMode::kAuto;  // auto: memory when the share fits the budget
  int64_t memory_budget_mb = 4096;  // per rank
  int64_t block_samples = 0;        // stream: samples per read; 0: about 4 MiB (bench/io.sh)
  int64_t shuffle_blocks = 16;      // stream: blocks per shuffle window
  int64_t bucket_batches = 0;       // ragged data, memory mode: length-bucketing window (epoch_order.hpp)
  bool redeal = false;              // training: a new share every epoch (above)
  // Threads that read at once: a shuffle window's blocks (stream) or the share's pieces at
  // open (memory). Several help where the samples are read outside HDF5 (chunk_reader.hpp).
  int read_threads = 1;
};

struct StreamCache {
  int64_t group = -1;
  std::vector<unsigned char> samples;  // the group's blocks, concatenated
  std::vector<int64_t> labels;  // record_width() per sample
};

class RankReader {
 public:
  RankReader(const std::string& dir, const Manifest& m, const std::string& split, int rank, int world,
             const ReaderOptions& opt);
  RankReader(const RankReader&) = delete;
  RankReader& operator=(const RankReader&) = delete;

  int64_t size() const { return size_; }  // samples this rank visits per epoch
  bool streaming() const { return !store_.has_value(); }
  bool dealt() const { return deal_ != Deal::kFixed; }  // a new share every epoch
  const DatasetSpec& spec() const { return spec_; }
  // BATCH > 0 (training): ragged samples are length-bucketed in batches of BATCH when
  // the reader holds them in memory and bucket_batches > 0.
  EpochOrder order(bool shuffle, uint64_t seed, int64_t epoch, int64_t batch = 0) const;
  bool bucketing() const { return store_.has_value() && spec_.ragged && bucket_batches_ > 0; }
  // RECORDS receives n * spec().record_width() label values.
  void fill(const EpochOrder& order, int64_t pos, int64_t n, void* samples, int64_t* records,
            StreamCache& cache) const;
  // The class labels of the samples this rank visits in EPOCH (training order's share),
  // in no particular order: for the start-up check of each rank's class mix.
  std::vector<int64_t> share_labels(uint64_t seed, int64_t epoch) const;

 private:
  enum class Deal { kFixed, kSamples, kBlocks };
  void load_group(const EpochOrder& order, int64_t g, StreamCache& cache) const;
  std::vector<SampleRange> epoch_ranges(bool shuffle, uint64_t seed, int64_t epoch) const;
  std::vector<int64_t> store_ids(const std::vector<SampleRange>& ranges) const;

  DatasetSpec spec_;
  int rank_ = 0, world_ = 1;
  int64_t size_ = 0;
  Deal deal_ = Deal::kFixed;
  std::vector<int64_t> counts_;        // samples per shard of the split
  std::vector<int64_t> shard_offset_;  // kSamples: index of each shard's first sample in the store
  std::vector<SampleRange> ranges_;    // the fixed plan (rules 1-2)
  std::optional<SampleStore> store_;
  std::vector<std::unique_ptr<ShardFile>> files_;  // stream mode, by shard index
  int64_t block_ = 1, group_ = 1;
  int64_t bucket_batches_ = 0;
  int read_threads_ = 1;
};

}  // namespace lockstep::io
