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
// The run's hyper-parameters go to TensorBoard's HParams plugin (its dashboard compares the
// runs of a sweep): a summary tagged "_hparams_/session_start_info" whose metadata carries
// plugin "hparams" and an HParamsPluginData { version 0, session_start_info { hparams
// map<string, google.protobuf.Value>, start_time_secs } }, and at the end
// "_hparams_/session_end_info" { status, end_time_secs } (tensorboard/plugins/hparams/
// plugin_data.proto, api.proto).
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
  // with a step >= STEP — what a run that crashed and resumed at STEP wrote past its
  // checkpoint, and now writes again (recorder.cpp gives it the rows kept at STEP again).
  void session_start(int64_t step);
  // A hyper-parameter: a number, a flag or a text (google.protobuf.Value's kinds).
  struct HParam {
    std::string name;
    enum class Kind { kNumber, kBool, kText } kind = Kind::kText;
    double number = 0;
    bool flag = false;
    std::string text;
  };
  void hparams_start(const std::vector<HParam>& hparams);
  void hparams_end(bool success);
  const std::string& path() const { return path_; }

 private:
  void write_event(const std::string& event);

  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace lockstep::io
