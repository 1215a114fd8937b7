// idx_import: the IDX (MNIST-family) importer behind `lockstep shard --input idx:DIR`.
//
// DIR holds train-images-idx3-ubyte, train-labels-idx1-ubyte and optionally
// t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, each raw or .gz. train becomes split
// "train", t10k split "test". Steps:
// 1. read and check both files of a split (magic, dtype, counts agree);
// 2. optionally shuffle (seeded) and cut to --limit samples;
// 3. per-channel mean/std from the train split, stored for every split;
// 4. remove the old manifest, write each split's shards, write the manifest last, remove
//    shard files of those splits that the new manifest does not list.
// A manifest whose source fingerprint (input files' sizes and mtimes + options) matches
// means the work is done: the import is skipped unless forced.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/shard_format.hpp"
#include "io/shard_writer.hpp"

namespace lockstep::io {

struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<unsigned char> data;  // uint8 elements, row-major
};

// Reads an IDX file (raw or gzip); only unsigned-byte (type 0x08) arrays.
IdxArray read_idx(const std::string& path);

struct ImportOptions {
  std::string input_dir;
  std::string output_dir;
  std::string name = "dataset";
  std::vector<std::string> class_names;
  int shards = 1;
  int64_t limit = 0;  // samples per split, 0 = all
  bool shuffle = true;
  uint64_t seed = 0;
  WriteOptions write;
  bool force = false;
};

struct ImportResult {
  Manifest manifest;
  bool skipped = false;  // the output already matched
};

ImportResult import_idx(const ImportOptions& opt);

}  // namespace lockstep::io
