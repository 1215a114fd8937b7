// sample_store: a rank's share of one split, held in memory, and batch assembly from it.
//
// load_rank_samples opens the rank's shards (shard_plan), checks each against the
// manifest and reads its ranges in pieces on several threads (they read at once where the
// samples are read outside HDF5: chunk_reader.hpp). This is rank_reader's memory mode; its
// stream mode reads the shards block by block instead.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/dataset/shard_format.hpp"

namespace lockstep::io {

class SampleStore {
 public:
  // RECORDS: record_width() label values per sample (shard_format.hpp).
  SampleStore(DatasetSpec spec, std::vector<unsigned char> samples, std::vector<int64_t> records);
  int64_t size() const { return static_cast<int64_t>(labels_.size()) / spec_.record_width(); }
  const DatasetSpec& spec() const { return spec_; }
  // Copies samples IDX[0..n) into OUT_SAMPLES (n * sample_bytes) and their records into
  // OUT_RECORDS (n * record_width()).
  void gather(const int64_t* idx, int64_t n, void* out_samples, int64_t* out_records) const;
  const unsigned char* raw_samples() const { return samples_.data(); }
  const int64_t* raw_labels() const { return labels_.data(); }

 private:
  DatasetSpec spec_;
  std::vector<unsigned char> samples_;
  std::vector<int64_t> labels_;
};

// This rank's share of SPLIT of the dataset in DIR (manifest M), read on THREADS threads.
SampleStore load_rank_samples(const std::string& dir, const Manifest& m, const std::string& split,
                              int rank, int world, int threads = 1);

std::vector<int64_t> shard_counts(const SplitEntry& split);

}  // namespace lockstep::io
