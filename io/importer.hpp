// importer: the pipeline every `lockstep shard` input goes through.
//
// 1. If DIR's manifest carries the same source fingerprint, nothing is done.
// 2. Each input split is planned (import_plan: shuffle, limit, stratified validation,
//    shards) and written in ONE sequential pass over its source: samples are routed to
//    their shard's buffer and appended in ~1 MiB slices, so a multi-GB source is never
//    held in memory.
// 3. Per-channel mean/std are accumulated over the first split's training samples
//    during its pass and stored in every shard of every split (written at finish()).
// 4. The old manifest is removed before writing and the new one written last; shard files
//    of these splits that the new manifest does not list are removed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/import_plan.hpp"
#include "io/sample_source.hpp"
#include "io/shard_format.hpp"
#include "io/shard_writer.hpp"

namespace lockstep::io {

struct InputSplit {
  std::string split;                     // "train", "test"
  std::unique_ptr<SampleSource> source;  // owned
  bool with_val = false;                 // carve --val-fraction out of this split
};

struct ImportOptions {
  std::string output_dir;
  std::string name = "dataset";
  std::vector<std::string> class_names;  // empty: the sources' names, else 0..K-1
  PlanOptions plan;
  WriteOptions write;
  bool force = false;
  bool progress = false;  // a progress line on stderr (set when stderr is a TTY)
};

struct ImportResult {
  Manifest manifest;
  bool skipped = false;
};

// FINGERPRINT describes the inputs (files, sizes, mtimes) and every option.
ImportResult run_import(std::vector<InputSplit> inputs, const ImportOptions& opt, const std::string& source,
                        const std::string& fingerprint);

// "PATH:size:mtime" for each path, for fingerprints.
std::string file_fingerprint(const std::vector<std::string>& paths);

// Running per-channel mean/std (channel = first sample dimension), any sample dtype.
class ChannelStats {
 public:
  explicit ChannelStats(const DatasetSpec& spec);
  void add(const void* samples, int64_t n);
  void finish(std::vector<double>* mean, std::vector<double>* std) const;

 private:
  DatasetSpec spec_;
  int64_t channels_, per_channel_;
  std::vector<double> sum_, sq_;
  int64_t samples_ = 0;
};

}  // namespace lockstep::io
