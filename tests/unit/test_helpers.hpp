// Helpers shared by the unit tests: temp dirs and small synthetic datasets.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "io/dataset/shard_format.hpp"

namespace lockstep::testing {

// A fresh empty directory under the test temp dir, unique per test.
std::string fresh_dir(const std::string& tag);

// A small uint8 image dataset spec: [1, 4, 4], CLASSES classes.
io::DatasetSpec tiny_spec(int64_t classes = 3);

// A spec of float samples of SHAPE with CLASSES classes, named "t" (for building models).
io::DatasetSpec shape_spec(std::vector<int64_t> shape, int64_t classes);

// A "pictures" spec of uint8 (or DTYPE) samples of SHAPE, 10 classes, per-channel mean
// 90/110/130 and std 50/60/70 (for the batch maker and feed).
io::DatasetSpec pictures_spec(std::vector<int64_t> shape, io::DType dtype = io::DType::kUInt8);

// Whether any of LINES contains NEEDLE.
bool has_line(const std::vector<std::string>& lines, const std::string& needle);

// The pid of a child process that exited and was reaped: a writer that is gone.
long exited_pid();

// A ragged sequence spec with CTC targets: float [3, 20] (3 channels, 20 time steps), at most
// 4 target tokens of " ", "a", "b", mean 1 and std 2 in every channel.
io::DatasetSpec speech_spec();

// N samples of SPEC with deterministic content; labels i % classes.
void tiny_data(const io::DatasetSpec& spec, int64_t n, std::vector<unsigned char>* samples,
               std::vector<int64_t>* labels);

// Writes a dataset dir with a "train" split of N samples in SHARDS shards and a manifest.
io::Manifest write_tiny_dataset(const std::string& dir, int64_t n, int shards);

// Asserts that BODY throws lockstep::Error whose message contains NEEDLE.
#define EXPECT_ERROR_CONTAINS(body, needle)                                         \
  do {                                                                              \
    try {                                                                           \
      body;                                                                         \
      ADD_FAILURE() << "expected an error containing '" << (needle) << "'";         \
    } catch (const ::lockstep::Error& e) {                                          \
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what(); \
    }                                                                               \
  } while (0)

}  // namespace lockstep::testing
