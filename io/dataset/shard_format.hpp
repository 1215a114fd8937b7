// shard_format: lockstep's on-disk dataset format, version 1 (docs/shard-format.md is
// the specification; this header is its code).
//
// A dataset directory holds, per split, files NAME-00000-of-000NN.h5 and one
// manifest.json listing every shard with its sample count, class histogram and CRC-32.
// Each shard has /samples (N x sample_shape) and /labels (N, int64) plus root attributes
// describing the dataset (shape, dtype, classes, per-channel mean/std).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::io {

inline constexpr int kShardFormatVersion = 1;
inline constexpr const char* kManifestName = "manifest.json";
inline constexpr const char* kSamplesDataset = "samples";
inline constexpr const char* kLabelsDataset = "labels";
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

  int64_t sample_elems() const;
  size_t sample_bytes() const { return static_cast<size_t>(sample_elems()) * dtype_size(dtype); }
};

struct ShardEntry {
  std::string file;  // relative to the dataset directory
  int64_t count = 0;
  std::vector<int64_t> histogram;  // num_classes entries (empty when unlabeled)
  uint32_t crc32 = 0;              // of the whole file's bytes
};

struct SplitEntry {
  std::vector<ShardEntry> shards;
  int64_t count() const;
  std::vector<int64_t> histogram(int64_t classes) const;  // summed over shards
};

struct Manifest {
  DatasetSpec spec;
  std::string source;              // what the importer read, for humans
  std::string source_fingerprint;  // lets `lockstep shard` skip work already done
  // Random per import, also an attribute of every shard it wrote: a shard file replaced by
  // one of another import is refused at open. Empty in datasets made before it existed.
  std::string dataset_id;
  std::vector<std::pair<std::string, SplitEntry>> splits;  // in writing order

  const SplitEntry& split(const std::string& name, const std::string& dir) const;
  bool has_split(const std::string& name) const;
};

// IEEE half bits -> float (float16 samples are stored as raw 16-bit words).
float half_to_float(uint16_t h);

// What makes samples valid in a shard, checked by the writer before writing and by the
// reader after reading: labels in [0, num_classes) (labeled data) and finite float
// samples. The N samples are samples FIRST.. of WHERE (a file), named in the error.
void validate_samples(const DatasetSpec& spec, const void* samples, const int64_t* labels, int64_t n, int64_t first,
                      const std::string& where);

// A name that stays inside its directory: no '/', not "." or "..", not empty.
bool is_plain_file_name(const std::string& name);
std::string shape_text(const std::vector<int64_t>& shape);  // "[1,28,28]"
std::string crc_hex(uint32_t crc);  // "1d00157d"

// "train-00003-of-00016.h5"
std::string shard_file_name(const std::string& split, int index, int count);

// manifest.json <-> Manifest. read_manifest checks the format version and consistency
// (histograms sum to counts, class names match the class count) and names DIR in errors.
std::string manifest_to_json(const Manifest& m);
Manifest read_manifest(const std::string& dir);
void write_manifest(const std::string& dir, const Manifest& m);  // atomic

}  // namespace lockstep::io
