// shard_writer: writes shard files and whole splits in the format of shard_format.hpp.
//
// Protocol for one shard (never a partial file under a final name):
// 1. create NAME.h5's marked temp file (io/util/temp_files.hpp) and its datasets at their full size, chunked, each chunk with
//    HDF5's Fletcher-32 checksum (after shuffle/deflate when compressed): every later read
//    of a chunk is verified by HDF5 itself, so bytes changed after import are never
//    trained on, at the cost of a checksum per chunk read (no extra I/O);
// 2. append samples and labels in order, checking each label and each float sample;
// 3. finish(): write the statistics attributes, close, compute the file's CRC-32 (the
//    manifest's whole-file check, `lockstep inspect --verify`), fsync;
// 4. commit(): rename to NAME.h5. The importer commits a whole import only once every
//    shard of it is finished, so a failed import leaves the previous dataset intact.
// A frame table (v3, spec.frame_table) is written with append_frames() (the distinct
// frames, in any order; /frames grows as they come) and append_clips() (each clip's T frame
// rows) instead of append(); io/import/clip_shard does it for the importer.
// A writer destroyed before commit() deletes its temp file.
#pragma once

#include <cstdint>
#include <string>

#include "io/util/h5.hpp"
#include "io/dataset/shard_format.hpp"

namespace lockstep::io {

struct WriteOptions {
  int compression = 0;        // deflate level 0..9 (0: none); shuffle filter when > 0
  int64_t chunk_samples = 0;  // samples per chunk; 0 picks ~1 MiB chunks
  std::string dataset_id;     // stored as an attribute; the manifest holds the same
  bool chunk_checksums = true;  // Fletcher-32 per chunk (false only to make pre-0.2 shards in tests)
};

class ShardWriter {
 public:
  ShardWriter(const std::string& dir, const std::string& split, int index, int count,
              const DatasetSpec& spec, int64_t n_samples, const WriteOptions& opt);
  ~ShardWriter();
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  // Appends N samples (sample_bytes() each) and their label records (record_width() each;
  // the class label is ignored when unlabeled).
  void append(const void* samples, const int64_t* records, int64_t n);
  // Frame tables: appends N frames (spec.frame_bytes() each); returns the first one's row.
  int64_t append_frames(const void* frames, int64_t n);
  // Frame tables: N clips as T rows each of the frames appended so far (checked), and their
  // label records.
  void append_clips(const int32_t* frame_rows, const int64_t* records, int64_t n);
  // Per-channel statistics, known only after a whole pass: stored at finish().
  void set_stats(const std::vector<double>& mean, const std::vector<double>& std);
  ShardEntry finish();
  void commit();  // after finish(): the file under its final name
  const std::string& final_path() const { return final_path_; }

 private:
  DatasetSpec spec_;
  std::string final_path_, tmp_path_, file_name_;
  void append_records(const int64_t* records, int64_t n);  // histogram, labels, lengths, targets

  int64_t total_ = 0, written_ = 0, frames_ = 0;
  std::vector<int64_t> histogram_;
  H5Handle file_, samples_, labels_, lengths_, targets_, frame_rows_;
  bool finished_ = false, committed_ = false;
};

// Writes N samples (and their label records) as SHARDS files of SPLIT (contiguous,
// near-equal ranges).
SplitEntry write_split(const std::string& dir, const std::string& split, const DatasetSpec& spec,
                       const void* samples, const int64_t* records, int64_t n, int shards,
                       const WriteOptions& opt);

// The HDF5 memory type of a sample dtype (float16: raw 16-bit words).
hid_t h5_type_of(DType t);


}  // namespace lockstep::io
