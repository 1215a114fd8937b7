// Helpers shared by the unit tests: temp dirs and small synthetic datasets.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/fence.hpp"
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

// Device copies out of host memory, faked for the reuse rule (core/base/fence.hpp): each
// record() starts a copy that stays in flight until the test completes it or a wait() does.
// Thread-safe (a loader's thread waits while the test records).
class FakeCopies {
 public:
  int record();                // a new copy in flight: its id
  bool done(int id) const;     // id < 0 (never recorded): true
  void complete(int id);       // the device finished it
  void wait(int id);           // complete(), counted as a wait
  int waited() const;
  int recorded() const;
  // Called with a copy's id as it completes, before its memory may be written again (what a
  // DMA would read): the test checks the memory still holds what was recorded.
  std::function<void(int)> on_complete;

 private:
  mutable std::mutex mu_;
  std::map<int, bool> done_;
  int next_ = 0, waited_ = 0;
};

// HostBuffers of plain memory whose fences are COPIES' fakes; ALLOCATED (if given) lists
// every allocation.
HostBuffers fake_host_buffers(FakeCopies* copies, std::vector<void*>* allocated = nullptr);

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
