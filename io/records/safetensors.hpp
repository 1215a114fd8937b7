// safetensors: the safetensors weight format (huggingface/safetensors), read and written
// here without its library — the format is one JSON header and raw bytes:
//
//   u64 little-endian N | N bytes of JSON header | the data bytes
//   header: {"NAME": {"dtype": "F32", "shape": [..], "data_offsets": [BEGIN, END]}, ...,
//            "__metadata__": {"key": "text", ...}}
//   offsets are relative to the start of the data; tensors are little-endian, C order.
//
// Reading validates everything before trusting it: the header length against the file
// size, the JSON, each dtype, each shape times its dtype size against its span, spans
// inside the data and not overlapping. Any problem is one line naming the file and
// tensor. Writing is atomic (io/util/file_util), with the data 8-byte aligned.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lockstep::io {

struct SafeTensor {
  std::string name;
  std::string dtype;            // F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL
  std::vector<int64_t> shape;
  std::string data;             // raw little-endian bytes
};

struct SafeTensors {
  std::vector<SafeTensor> tensors;              // in file order (writing: as given)
  std::map<std::string, std::string> metadata;  // "__metadata__"
  const SafeTensor* find(const std::string& name) const;
};

size_t safetensors_dtype_size(const std::string& dtype);  // 0 when unknown

void write_safetensors(const std::string& path, const SafeTensors& st);
SafeTensors read_safetensors(const std::string& path);  // throws Error naming PATH

}  // namespace lockstep::io
