// importer: the pipeline every `lockstep shard` input goes through.
//
// 1. If DIR's manifest carries the same source fingerprint, nothing is done.
// 2. Each input split is planned (import_plan: shuffle, limit, stratified validation,
//    shards) and read in ONE sequential pass over its source: samples are routed to
//    their shard's buffer and appended in ~1 MiB slices, so a multi-GB source is never
//    held in memory. A shuffled shard is stored in its planned random order through a
//    staging file (shard_stage.hpp); the manifest records the order (sample_order). Video
//    clips stored as a frame table go through clip_shard.hpp instead (each frame once).
// 3. Per-channel mean/std are accumulated over the first split's training samples
//    during its pass and stored in every shard of every split (written at finish()).
// 4. Nothing the import did not make is destroyed: it takes DIR's lock (dir_lock.hpp: a
//    second `shard` into the same directory is refused naming the first; a directory
//    without lockstep's mark is adopted only when it holds just a dataset's manifest and
//    shards); it refuses (without --force) an output directory that holds another
//    dataset (a manifest of another source) or files that are not lockstep shards, and an
//    input inside the output directory; an input file the import would overwrite is
//    refused even with --force. Only marked temp files of a writer that is gone are
//    removed (temp_files.hpp); a user's "*.tmp.*" file is someone else's.
// 5. Shards are written under temp names and committed only when every shard of every
//    split is finished: then the old manifest is removed, the shards renamed into place,
//    the new manifest written last, and shard files it does not list removed (those of
//    the splits written now, and every shard the replaced manifest listed). A failed import leaves the previous dataset as it was (and no temp
//    files: the writers remove theirs; leftovers of a killed import are removed first).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/import/channel_stats.hpp"
#include "io/import/import_plan.hpp"
#include "io/import/sample_source.hpp"
#include "io/dataset/shard_format.hpp"
#include "io/dataset/shard_writer.hpp"

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
  bool any_units = false;  // a later input (--test-input) in other units than the training one is imported
  std::vector<std::string> input_files;  // the files (or IDX directory) read, for the overwrite checks
  bool progress = false;  // a progress line on stderr (set when stderr is a TTY)
  size_t reorder_window_bytes = size_t{256} << 20;  // memory for storing a shuffled shard (shard_stage.hpp)
};

struct ImportResult {
  Manifest manifest;
  bool skipped = false;
};

// FINGERPRINT describes the inputs (files, sizes, mtimes) and every option; the manifest
// stores its hash. SOURCE names the input ("idx:DIR") in the manifest.
// LEGACY_FINGERPRINT (optional): the same inputs as lockstep described them before
// 2026-11-29; a dataset it marks is up to date too.
ImportResult run_import(std::vector<InputSplit> inputs, const ImportOptions& opt, const std::string& source,
                        const std::string& fingerprint, const std::string& legacy_fingerprint = "");

// Each path's size, ns mtime and, for small inputs, a hash of its bytes: fingerprints.
// LEGACY: size and whole-second mtime, as before 2026-11-29.
std::string file_fingerprint(const std::vector<std::string>& paths, bool legacy = false);

}  // namespace lockstep::io
