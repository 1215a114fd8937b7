// shard_format: lockstep's on-disk dataset format, versions 1 to 3 (docs/shard-format.md
// is the specification; this header is its code).
//
// A dataset directory holds, per split, files NAME-00000-of-000NN.h5 and one
// manifest.json listing every shard with its sample count, class histogram and CRC-32.
// Each shard has /samples (N x sample_shape) and /labels (N, int64) plus root attributes
// describing the dataset (shape, dtype, classes, per-channel mean/std).
// Version 2 adds sequences: variable-length samples ("ragged": the last sample axis is
// time, stored padded with zeros to sample_shape's length, /lengths (N) the valid steps)
// and sequence targets (/targets (N x max_target_length) token ids in [0, tokens),
// padded with -1; no class labels then). A v1 dataset is a v2 one with neither.
// Version 3 adds frame tables (video clips with each frame stored once): samples [C, T, H, W]
// are not stored whole; /frames (F x C x H x W) holds a shard's distinct frames and
// /clip_frames (N x T, int32) each clip's T rows of /frames. A reader assembles the same
// [C, T, H, W] samples the clips were (frame_table.hpp).
//
// In memory a sample's labels travel as one int64 RECORD of record_width() values:
// [class label (-1 when unlabeled), length (ragged only), targets (max_target_length)].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::io {

inline constexpr int kShardFormatVersion = 3;  // the newest this lockstep reads; v1 data is written as v1
inline constexpr const char* kManifestName = "manifest.json";
inline constexpr const char* kSamplesDataset = "samples";
inline constexpr const char* kLabelsDataset = "labels";
inline constexpr const char* kLengthsDataset = "lengths";
inline constexpr const char* kTargetsDataset = "targets";
inline constexpr const char* kFramesDataset = "frames";          // v3 frame tables
inline constexpr const char* kClipFramesDataset = "clip_frames";  // v3 frame tables
inline constexpr int64_t kMaxClasses = 100000;  // a sanity bound on a manifest's num_classes

enum class DType { kUInt8, kInt16, kFloat16, kFloat32 };

std::string dtype_name(DType t);
DType dtype_from_name(const std::string& name);  // throws naming the bad value
size_t dtype_size(DType t);

// Everything about a dataset that is the same for all its shards.
struct DatasetSpec {
  std::string name;
  std::vector<int64_t> sample_shape;  // e.g. {1, 28, 28} (channels first)
  DType dtype = DType::kUInt8;
  bool labeled = true;      // false: no /labels dataset, num_classes 0 (e.g. for pretraining data)
  int64_t num_classes = 0;
  std::vector<std::string> class_names;  // empty or num_classes names
  std::vector<double> mean;              // per channel, in raw sample units
  std::vector<double> std;
  bool ragged = false;            // v2: last axis is time, padded; per-sample lengths
  int64_t max_target_length = 0;  // v2: > 0 for sequence targets (then labeled is false)
  std::vector<std::string> tokens;  // v2: the target vocabulary, token id -> text
  bool frame_table = false;         // v3: clips [C, T, H, W] stored as frames + clip rows

  int64_t sample_elems() const;
  int64_t record_width() const { return targets_column() + max_target_length; }
  // Where a record's length (ragged) and first target token sit (the layout above).
  static constexpr int64_t kLengthColumn = 1;
  int64_t targets_column() const { return ragged ? 2 : 1; }
  bool sequence_targets() const { return max_target_length > 0; }
  // A model of this data emits token sequences (CTC): a dataset with sequence targets has a
  // vocabulary, and so has unlabelled speech once a CTC model's vocabulary is given to it
  // (weight_source.hpp's spec_for_model): what `predict` transcribes.
  bool sequence_outputs() const { return !tokens.empty(); }
  int64_t time_steps() const { return sample_shape.empty() ? 0 : sample_shape.back(); }  // ragged: the padded length
  int format_version() const { return frame_table ? 3 : ragged || sequence_targets() ? 2 : 1; }
  // Frame tables: a clip's frame count T and one frame's bytes (C x H x W values).
  int64_t clip_length() const { return sample_shape.size() == 4 ? sample_shape[1] : 0; }
  size_t frame_bytes() const { return clip_length() > 0 ? sample_bytes() / static_cast<size_t>(clip_length()) : 0; }
  size_t sample_bytes() const { return static_cast<size_t>(sample_elems()) * dtype_size(dtype); }
};

struct ShardEntry {
  std::string file;  // relative to the dataset directory
  int64_t count = 0;
  std::vector<int64_t> histogram;  // num_classes entries (empty when unlabeled)
  uint32_t crc32 = 0;              // of the whole file's bytes
  int64_t frames = 0;              // v3 frame tables: the distinct frames the shard stores
  // Where the manifest lists it (read_manifest; not stored): the shard's own attributes must
  // say the same, or a manifest edited by hand (shards reordered, a split pointing at another
  // split's shards) reads samples in another order, or scores the wrong split, silently.
  std::string split;
  int64_t index = -1, of = 0;
};

struct SplitEntry {
  std::vector<ShardEntry> shards;
  int64_t count() const;
  std::vector<int64_t> histogram(int64_t classes) const;  // summed over shards
};

// How the importer ordered the samples inside each shard. kShuffled: a seeded random
// order, so any contiguous range of a shard is an unbiased sample of its split. kSource:
// the input's order (`lockstep shard --no-shuffle`, and datasets made before lockstep
// recorded it), which may be sorted by class or subject.
enum class SampleOrder { kSource, kShuffled };

struct Manifest {
  DatasetSpec spec;
  std::string source;              // what the importer read, for humans
  std::string source_fingerprint;  // lets `lockstep shard` skip work already done
  // Random per import, also an attribute of every shard it wrote: a shard file replaced by
  // one of another import is refused at open. Empty in datasets made before it existed.
  std::string dataset_id;
  SampleOrder sample_order = SampleOrder::kSource;
  uint64_t order_seed = 0;  // the import's --seed (kShuffled)
  int64_t skipped_inputs = 0;  // input files skipped because they did not decode (--skip-bad)
  std::vector<std::pair<std::string, SplitEntry>> splits;  // in writing order

  const SplitEntry& split(const std::string& name, const std::string& dir) const;
  bool has_split(const std::string& name) const;
};

// IEEE half bits -> float (float16 samples are stored as raw 16-bit words).
float half_to_float(uint16_t h);
// The first of N samples (float32 or float16 data, as stored) holding NaN or Inf, and that
// value in *VALUE; -1 when all are finite or the dtype is an integer one.
int64_t first_nonfinite_sample(const DatasetSpec& spec, const void* samples, int64_t n, float* value);

// What makes samples valid in a shard, checked by the writer before writing and by the
// reader after reading: labels in [0, num_classes) (labeled data), lengths in
// [1, time_steps()] (ragged), targets of at least one token in [0, tokens) then only -1
// (sequence targets), and finite float samples. RECORDS holds N record_width() records.
// The N samples are samples FIRST.. of WHERE (a file), named in the error.
void validate_samples(const DatasetSpec& spec, const void* samples, const int64_t* records, int64_t n, int64_t first,
                      const std::string& where);
// The valid time steps of record R (time_steps() when not ragged).
inline int64_t record_length(const DatasetSpec& spec, const int64_t* r) {
  return spec.ragged ? r[DatasetSpec::kLengthColumn] : spec.time_steps();
}
// The class labels of N records (each record's first column) into OUT.
inline void record_classes(const DatasetSpec& spec, const int64_t* records, int64_t n, int64_t* out) {
  const int64_t w = spec.record_width();
  for (int64_t i = 0; i < n; ++i) out[i] = records[i * w];
}
// The target tokens of record R (sequence targets): a pointer to max_target_length values, -1 padded.
inline const int64_t* record_targets(const DatasetSpec& spec, const int64_t* r) { return r + spec.targets_column(); }
int64_t target_length(const DatasetSpec& spec, const int64_t* r);
// The fewest frames a CTC alignment of the K tokens at T takes: the tokens, plus a blank
// between each two equal neighbours. Fewer frames: no alignment (the loss counts it 0).
int64_t ctc_frames_needed(const int64_t* t, int64_t k);

// A name that stays inside its directory: no '/', not "." or "..", not empty.
bool is_plain_file_name(const std::string& name);
std::string shape_text(const std::vector<int64_t>& shape);  // "[1,28,28]"
std::string crc_hex(uint32_t crc);  // "1d00157d"
// The newline-separated form of a name list (shard attributes class_names, tokens), and back.
std::string join_lines(const std::vector<std::string>& items);
std::vector<std::string> split_lines(const std::string& text);

// "train-00003-of-00016.h5"
std::string shard_file_name(const std::string& split, int index, int count);

// manifest.json <-> Manifest. read_manifest checks the format version and consistency
// (histograms sum to counts, class names match the class count) and names DIR in errors.
// Normalisation statistics read from any file (manifest, checkpoint, safetensors): ""
// when MEAN and STD have one entry each per channel (CHANNELS; -1: any count, the same for
// both) with every mean finite and within +-1e15 and every std in [1e-15, 1e15]; else
// the problem, naming the channel. Outside that range a float32 normalisation turns
// samples into inf/NaN (a NaN loss, NaN predictions), silently.
// What lockstep's reader refuses in a dataset's description ("" when nothing): 1 to 8
// sample dimensions, each positive, at most 2^40 values per sample; 1 to kMaxClasses
// classes, as many class names as classes (or none); target lengths within [0, 100000];
// frame tables only for 4-D uint8 [C, T, H, W] samples of fixed length.
// read_manifest checks it, and the importer checks it before writing anything, so `shard`
// never writes a dataset `train` refuses.
std::string spec_problem(const DatasetSpec& spec);
std::string normalisation_problem(const std::vector<double>& mean, const std::vector<double>& std, int64_t channels);
std::string manifest_to_json(const Manifest& m);
Manifest read_manifest(const std::string& dir);
void write_manifest(const std::string& dir, const Manifest& m);  // atomic

}  // namespace lockstep::io
