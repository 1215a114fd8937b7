// tb_writer: TensorBoard event files (scalars), written without TensorFlow or protobuf.
// By hand because the format is three protobuf fields in a CRC-framed record: the
// protobuf compiler and runtime would be the largest dependency of the build for that.
//
// File RUN_DIR/tb/events.out.tfevents.<unix time>.<host>: a sequence of TFRecords,
//   u64 length | u32 masked_crc32c(length bytes) | data | u32 masked_crc32c(data)
// (little-endian; masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8), each data an Event
// protobuf: the first carries file_version "brain.Event:2", the others wall_time, step and
// a Summary of (tag, simple_value) pairs. Flushed per event, so a killed job keeps what it
// logged. Rank 0 only (the trainer's rule); a resumed run appends a new file to the dir.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace lockstep::io {

uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);

class TbWriter {
 public:
  TbWriter(const std::string& dir, const std::string& host);  // throws naming the file
  ~TbWriter();
  TbWriter(const TbWriter&) = delete;
  TbWriter& operator=(const TbWriter&) = delete;

  // One event at STEP with every (tag, value) in SCALARS.
  void scalars(int64_t step, const std::vector<std::pair<std::string, double>>& scalars);
  // A SessionLog START event at STEP: TensorBoard then drops the events of earlier files
  // with a step >= STEP — what a run that crashed and resumed at STEP - 1 wrote past its
  // checkpoint, and now writes again.
  void session_start(int64_t step);
  const std::string& path() const { return path_; }

 private:
  void write_event(const std::string& event);

  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace lockstep::io
