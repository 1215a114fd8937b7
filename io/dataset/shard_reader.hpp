// shard_reader: opens one shard file, checks it against the dataset's manifest, and reads
// sample ranges from it.
//
// Every check names the file: missing file, not HDF5, missing datasets, shape/dtype that
// differ from the manifest (the dtype attribute and the HDF5 type of /samples and
// /labels: HDF5 would otherwise convert, i.e. clamp, silently), a count that differs from
// the manifest, a shard of another import (dataset_id), labels outside [0, classes),
// NaN/Inf in float samples.
//
// A frame table (v3) reads as the clips it stores: each clip's T rows of /clip_frames
// (checked against the frame count) select frames of /frames, read once per call in merged
// runs and assembled into [C, T, H, W] samples (frame_table.hpp).
//
// Integrity (bytes changed after `lockstep shard` are never trained on):
// - shards with per-chunk Fletcher-32 checksums (every shard lockstep writes): each chunk
//   read is verified (by HDF5, or by the ChunkReader that reads /samples outside HDF5 where
//   it applies: chunk_reader.hpp); a mismatch is an error naming the file and samples;
// - older shards without them: the whole file's CRC-32 is checked against the manifest
//   once, when the file is opened (one extra read per run, not per epoch).
#pragma once

#include "io/dataset/frame_table.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/dataset/chunk_reader.hpp"
#include "io/util/h5.hpp"
#include "io/dataset/shard_format.hpp"

namespace lockstep::io {

class ShardFile {
 public:
  // Opens PATH and checks it against SPEC and, when ENTRY is given, against the
  // manifest's entry (count; CRC-32 for shards without chunk checksums) and DATASET_ID.
  ShardFile(const std::string& path, const DatasetSpec& spec, const ShardEntry* entry = nullptr,
            const std::string& dataset_id = "");
  ShardFile(const ShardFile&) = delete;
  ShardFile& operator=(const ShardFile&) = delete;
  ShardFile(ShardFile&&) noexcept = default;
  ShardFile& operator=(ShardFile&&) noexcept = default;

  int64_t count() const { return count_; }
  int64_t frames() const { return frames_; }  // frame tables: the distinct frames stored
  const std::string& path() const { return path_; }
  bool chunk_checksums() const { return chunk_checksums_; }
  // Reads samples [BEGIN, BEGIN+N) into SAMPLES (N * sample_bytes) and their label
  // records into RECORDS (N * record_width(); class label -1 when unlabeled).
  void read(int64_t begin, int64_t n, void* samples, int64_t* records) const;
  // The class labels of samples [BEGIN, BEGIN+N) alone (labeled data), checked against
  // the class count: what a rank's class mix is computed from without reading samples.
  std::vector<int64_t> read_class_labels(int64_t begin, int64_t n) const;

 private:
  void check_rows(int64_t begin, int64_t n) const;  // [BEGIN, BEGIN+N) lies in the shard
  std::string read_error(const char* dataset, int64_t begin, int64_t n) const;
  // N x COLS int64 values of integer dataset D from row BEGIN; the caller holds the HDF5 lock.
  std::vector<int64_t> read_ints(const H5Handle& d, const char* name, int64_t begin, int64_t n, int64_t cols) const;
  // Frame tables: the frame rows of the N clips from BEGIN and the frames they name (the
  // caller holds the HDF5 lock; the clips are assembled after it is released).
  ClipBlock read_clip_block(int64_t begin, int64_t n) const;

  std::string path_;
  DatasetSpec spec_;
  int64_t count_ = 0, frames_ = 0;
  bool chunk_checksums_ = false;
  H5Handle file_, samples_, labels_, lengths_, targets_;  // samples_: /frames for a frame table
  H5Handle frame_rows_;                                   // /clip_frames
  std::unique_ptr<ChunkReader> chunks_;  // /samples read outside HDF5 where it applies (chunk_reader.hpp)
};

// The attributes of a shard file, for `lockstep inspect FILE.h5` (no manifest needed).
struct ShardHeader {
  DatasetSpec spec;
  std::string split;
  int64_t index = 0, count_of = 0, samples = 0, frames = 0;  // frames: v3 frame tables
  std::vector<int64_t> chunk;
  std::string filters;
  std::string dataset_id;
};
ShardHeader read_shard_header(const std::string& path);

// Checks every shard of every split in DIR against the manifest: existence, CRC-32,
// attributes, counts, labels. Returns one line per shard; throws on the first problem.
std::vector<std::string> verify_dataset(const std::string& dir);
// The shard at PATH checked as verify_dataset checks it, against the manifest in its folder:
// its "ok ..." line, or "" when no manifest there lists it; throws naming the file.
std::string verify_listed_shard(const std::string& path);

}  // namespace lockstep::io
