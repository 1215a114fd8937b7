// tb_writer: see tb_writer.hpp.
#include "io/records/tb_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/base/error.hpp"
#include "io/util/file_util.hpp"

namespace lockstep::io {
namespace {

// Protobuf wire format: the handful of encodings an Event needs.
void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void fixed(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
void bytes_field(std::string& out, int field, const std::string& payload) {
  varint(out, static_cast<uint64_t>(field) << 3 | 2);
  varint(out, payload.size());
  out += payload;
}

void double_field(std::string& out, int field, double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, 8);
  varint(out, static_cast<uint64_t>(field) << 3 | 1);
  fixed(out, bits, 8);
}

std::string event_header(double wall_time, int64_t step) {
  std::string e;
  double_field(e, 1, wall_time);  // wall_time
  varint(e, 2 << 3 | 0);  // step: int64
  varint(e, static_cast<uint64_t>(step));
  return e;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

uint32_t masked(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

}  // namespace

uint32_t crc32c(const void* data, size_t n, uint32_t crc) {
  static const auto table = [] {
    std::vector<uint32_t> t(256);
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

TbWriter::TbWriter(const std::string& dir, const std::string& host) {
  make_dirs(dir);
  path_ = dir + "/events.out.tfevents." + std::to_string(static_cast<int64_t>(now_seconds())) + "." + host;
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0664);
  if (fd < 0) throw Error("cannot open " + path_ + " for writing: " + std::strerror(errno));
  file_ = ::fdopen(fd, "ab");
  if (!file_) throw Error("cannot open " + path_ + " for writing: " + std::strerror(errno));
  std::string e = event_header(now_seconds(), 0);
  bytes_field(e, 3, "brain.Event:2");  // file_version
  write_event(e);
}

TbWriter::~TbWriter() {
  if (file_) std::fclose(file_);
}

void TbWriter::scalars(int64_t step, const std::vector<std::pair<std::string, double>>& scalars) {
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string v;
    bytes_field(v, 1, tag);  // Summary.Value.tag
    const float f = static_cast<float>(value);
    uint32_t bits = 0;
    std::memcpy(&bits, &f, 4);
    varint(v, 2 << 3 | 5);  // simple_value: float
    fixed(v, bits, 4);
    bytes_field(summary, 1, v);  // Summary.value (repeated)
  }
  std::string e = event_header(now_seconds(), step);
  bytes_field(e, 5, summary);  // Event.summary
  write_event(e);
}

void TbWriter::session_start(int64_t step) {
  std::string log;
  varint(log, 1 << 3 | 0);  // SessionLog.status
  varint(log, 1);           // START
  std::string e = event_header(now_seconds(), step);
  bytes_field(e, 7, log);   // Event.session_log
  write_event(e);
}

namespace {

// An event whose Summary holds one value TAG carrying the hparams plugin's data: an
// HParamsPluginData { version 0, field FIELD = PAYLOAD } (3: session start, 4: session end).
std::string hparams_event(const std::string& tag, int field, const std::string& payload) {
  std::string content;
  varint(content, 1 << 3 | 0);  // HParamsPluginData.version
  varint(content, 0);
  bytes_field(content, field, payload);
  std::string plugin;
  bytes_field(plugin, 1, "hparams");  // PluginData.plugin_name
  bytes_field(plugin, 2, content);    // PluginData.content
  std::string metadata;
  bytes_field(metadata, 1, plugin);  // SummaryMetadata.plugin_data
  std::string tensor;
  varint(tensor, 1 << 3 | 0);  // TensorProto.dtype
  varint(tensor, 1);           // DT_FLOAT (an empty tensor: the data is the metadata)
  std::string value;
  bytes_field(value, 1, tag);       // Summary.Value.tag
  bytes_field(value, 8, tensor);    // Summary.Value.tensor
  bytes_field(value, 9, metadata);  // Summary.Value.metadata
  std::string summary;
  bytes_field(summary, 1, value);
  std::string e = event_header(now_seconds(), 0);
  bytes_field(e, 5, summary);  // Event.summary
  return e;
}

}  // namespace

void TbWriter::hparams_start(const std::vector<HParam>& hparams) {
  std::string start;
  for (const HParam& h : hparams) {
    std::string v;  // google.protobuf.Value
    if (h.kind == HParam::Kind::kNumber) {
      double_field(v, 2, h.number);
    } else if (h.kind == HParam::Kind::kBool) {
      varint(v, 4 << 3 | 0);
      varint(v, h.flag ? 1 : 0);
    } else {
      bytes_field(v, 3, h.text);
    }
    std::string entry;  // map<string, Value> entry
    bytes_field(entry, 1, h.name);
    bytes_field(entry, 2, v);
    bytes_field(start, 1, entry);  // SessionStartInfo.hparams
  }
  double_field(start, 5, now_seconds());  // SessionStartInfo.start_time_secs
  write_event(hparams_event("_hparams_/session_start_info", 3, start));
}

void TbWriter::hparams_end(bool success) {
  std::string end;
  varint(end, 1 << 3 | 0);  // SessionEndInfo.status
  varint(end, success ? 1 : 2);  // STATUS_SUCCESS, STATUS_FAILURE
  double_field(end, 2, now_seconds());  // SessionEndInfo.end_time_secs
  write_event(hparams_event("_hparams_/session_end_info", 4, end));
}

void TbWriter::write_event(const std::string& event) {
  std::string rec;
  fixed(rec, event.size(), 8);
  fixed(rec, masked(crc32c(rec.data(), 8)), 4);
  rec += event;
  fixed(rec, masked(crc32c(event.data(), event.size())), 4);
  if (std::fwrite(rec.data(), 1, rec.size(), file_) != rec.size() || std::fflush(file_) != 0)
    throw Error("cannot write " + path_ + ": " + std::strerror(errno));
}

}  // namespace lockstep::io
