// safetensors: see safetensors.hpp.
#include "io/records/safetensors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/base/error.hpp"
#include "io/util/file_util.hpp"
#include "io/util/json_io.hpp"

namespace lockstep::io {

const SafeTensor* SafeTensors::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

size_t safetensors_dtype_size(const std::string& d) {
  if (d == "F64" || d == "I64" || d == "U64") return 8;
  if (d == "F32" || d == "I32" || d == "U32") return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL") return 1;
  return 0;
}

void write_safetensors(const std::string& path, const SafeTensors& st) {
  Json header = Json::object();
  if (!st.metadata.empty()) {
    Json meta = Json::object();
    for (const auto& [k, v] : st.metadata) meta[k] = v;
    header["__metadata__"] = meta;
  }
  uint64_t offset = 0;
  for (const auto& t : st.tensors) {
    int64_t elems = 1;
    for (const int64_t d : t.shape) elems *= d;
    LOCKSTEP_REQUIRE(safetensors_dtype_size(t.dtype) > 0 &&
                         static_cast<uint64_t>(elems) * safetensors_dtype_size(t.dtype) == t.data.size(),
                     path + ": tensor " + t.name + " has " + std::to_string(t.data.size()) + " bytes for its shape");
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  std::string text = dump_json(header);
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::string out(8, '\0');
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  out += text;
  for (const auto& t : st.tensors) out += t.data;
  write_file_atomic(path, out);
}

SafeTensors read_safetensors(const std::string& path) {
  LOCKSTEP_REQUIRE(path_exists(path), path + ": no such file");
  require_regular_file(path);
  const int64_t size = file_size(path);
  LOCKSTEP_REQUIRE(size >= 8, path + ": not a safetensors file (shorter than its 8-byte header length)");
  const std::vector<char> bytes = read_binary_file(path);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[static_cast<size_t>(i)])) << (8 * i);
  LOCKSTEP_REQUIRE(n <= static_cast<uint64_t>(size) - 8,
                   fmt::format("{}: not a safetensors file (header length {} exceeds the file's {} bytes)", path, n, size));
  const Json header = parse_json(std::string(bytes.data() + 8, n), path + " (safetensors header)");
  LOCKSTEP_REQUIRE(header.is_object(), path + ": safetensors header is not a JSON object");
  const uint64_t data_start = 8 + n, data_size = static_cast<uint64_t>(size) - data_start;
  SafeTensors st;
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      LOCKSTEP_REQUIRE(entry.is_object(), path + ": __metadata__ is not an object");
      for (const auto& [k, v] : entry.items()) {
        LOCKSTEP_REQUIRE(v.is_string(), path + ": __metadata__ value of '" + k + "' is not a string");
        st.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    const std::string what = path + ": tensor " + name;
    LOCKSTEP_REQUIRE(entry.is_object(), what + " is not an object");
    SafeTensor t;
    t.name = name;
    t.dtype = json_get<std::string>(entry, "dtype", what);
    LOCKSTEP_REQUIRE(safetensors_dtype_size(t.dtype) > 0, what + " has unknown dtype '" + t.dtype + "'");
    t.shape = json_get<std::vector<int64_t>>(entry, "shape", what);
    const auto offsets = json_get<std::vector<uint64_t>>(entry, "data_offsets", what);
    LOCKSTEP_REQUIRE(offsets.size() == 2 && offsets[0] <= offsets[1] && offsets[1] <= data_size,
                     fmt::format("{} has data_offsets outside the file's {} data bytes", what, data_size));
    uint64_t elems = 1;
    for (const int64_t d : t.shape) {
      LOCKSTEP_REQUIRE(d >= 0 && (d == 0 || elems <= data_size / static_cast<uint64_t>(d)), what + " has an impossible shape");
      elems *= static_cast<uint64_t>(d);
    }
    LOCKSTEP_REQUIRE(elems * safetensors_dtype_size(t.dtype) == offsets[1] - offsets[0],
                     fmt::format("{}: shape and dtype {} need {} bytes, data_offsets give {}", what, t.dtype,
                                 elems * safetensors_dtype_size(t.dtype), offsets[1] - offsets[0]));
    t.data.assign(bytes.data() + data_start + offsets[0], offsets[1] - offsets[0]);
    spans.emplace_back(offsets[0], offsets[1]);
    st.tensors.push_back(std::move(t));
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    LOCKSTEP_REQUIRE(spans[i].first >= spans[i - 1].second, path + ": tensors' data_offsets overlap");
  return st;
}

}  // namespace lockstep::io
