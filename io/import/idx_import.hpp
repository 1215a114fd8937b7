// idx_import: the IDX (MNIST-family) input of `lockstep shard --input idx:DIR`.
//
// DIR holds train-images-idx3-ubyte and train-labels-idx1-ubyte, optionally
// t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte, each raw or .gz. train becomes
// split "train" (with --val-fraction carved out of it), t10k split "test". Images become
// [1, H, W] uint8 samples.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/import/importer.hpp"

namespace lockstep::io {

struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<unsigned char> data;  // uint8 elements, row-major
};

// Reads an IDX file (raw or gzip); only unsigned-byte (type 0x08) arrays.
IdxArray read_idx(const std::string& path);

// The splits of DIR; FILES receives the paths read (for the fingerprint).
std::vector<InputSplit> open_idx(const std::string& dir, std::vector<std::string>* files);

}  // namespace lockstep::io
