// shard_format: see shard_format.hpp.
#include "io/shard_format.hpp"

#include <boost/property_tree/ptree.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "core/error.hpp"
#include "io/file_util.hpp"
#include "io/json.hpp"

namespace lockstep::io {

std::string dtype_name(DType t) {
  switch (t) {
    case DType::kUInt8: return "uint8";
    case DType::kInt16: return "int16";
    case DType::kFloat16: return "float16";
    case DType::kFloat32: return "float32";
  }
  return "?";
}

DType dtype_from_name(const std::string& name) {
  if (name == "uint8") return DType::kUInt8;
  if (name == "int16") return DType::kInt16;
  if (name == "float16") return DType::kFloat16;
  if (name == "float32") return DType::kFloat32;
  throw Error("unknown sample dtype '" + name + "' (uint8, int16, float16, float32)");
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kUInt8: return 1;
    case DType::kInt16:
    case DType::kFloat16: return 2;
    case DType::kFloat32: return 4;
  }
  return 0;
}

int64_t DatasetSpec::sample_elems() const {
  return std::accumulate(sample_shape.begin(), sample_shape.end(), int64_t{1},
                         [](int64_t a, int64_t b) { return a * b; });
}

int64_t SplitEntry::count() const {
  int64_t n = 0;
  for (const auto& s : shards) n += s.count;
  return n;
}

std::vector<int64_t> SplitEntry::histogram(int64_t classes) const {
  std::vector<int64_t> h(static_cast<size_t>(std::max<int64_t>(classes, 0)), 0);
  for (const auto& s : shards)
    for (size_t c = 0; c < s.histogram.size() && c < h.size(); ++c) h[c] += s.histogram[c];
  return h;
}

bool Manifest::has_split(const std::string& name) const {
  for (const auto& [n, s] : splits)
    if (n == name) return true;
  return false;
}

const SplitEntry& Manifest::split(const std::string& name, const std::string& dir) const {
  for (const auto& [n, s] : splits)
    if (n == name) return s;
  throw Error(dir + "/" + kManifestName + ": no split '" + name + "'");
}

float half_to_float(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      int e = -1;
      uint32_t m = mant;
      do {
        ++e;
        m <<= 1;
      } while ((m & 0x400u) == 0);
      bits = sign | ((127 - 15 - e) << 23) | ((m & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

void validate_samples(const DatasetSpec& spec, const void* samples, const int64_t* labels, int64_t n, int64_t first,
                      const std::string& where) {
  for (int64_t i = 0; spec.labeled && i < n; ++i)
    LOCKSTEP_REQUIRE(labels[i] >= 0 && labels[i] < spec.num_classes,
                     where + ": label " + std::to_string(labels[i]) + " of sample " + std::to_string(first + i) +
                         " is outside [0, " + std::to_string(spec.num_classes) + ")");
  if (spec.dtype != DType::kFloat32 && spec.dtype != DType::kFloat16) return;
  const int64_t elems = n * spec.sample_elems();
  for (int64_t i = 0; i < elems; ++i) {
    const float v = spec.dtype == DType::kFloat32 ? static_cast<const float*>(samples)[i]
                                                  : half_to_float(static_cast<const uint16_t*>(samples)[i]);
    LOCKSTEP_REQUIRE(std::isfinite(v), where + ": sample " + std::to_string(first + i / spec.sample_elems()) +
                                           " contains NaN or Inf");
  }
}

bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

std::string shard_file_name(const std::string& split, int index, int count) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "-%05d-of-%05d.h5", index, count);
  return split + buf;
}

std::string manifest_to_json(const Manifest& m) {
  JsonObject splits;
  for (const auto& [name, split] : m.splits) {
    std::vector<JsonObject> shards;
    for (const auto& s : split.shards) {
      char crc[16];
      std::snprintf(crc, sizeof crc, "%08x", s.crc32);
      shards.push_back(JsonObject()
                           .add("file", s.file)
                           .add("count", s.count)
                           .add("histogram", s.histogram)
                           .add("crc32", std::string(crc)));
    }
    splits.add(name, JsonObject().add("count", split.count()).add_array("shards", shards));
  }
  JsonObject root;
  root.add("lockstep_format", kShardFormatVersion)
      .add("name", m.spec.name)
      .add("source", m.source)
      .add("source_fingerprint", m.source_fingerprint)
      .add("dataset_id", m.dataset_id)
      .add("sample_shape", m.spec.sample_shape)
      .add("dtype", dtype_name(m.spec.dtype))
      .add("labeled", m.spec.labeled)
      .add("num_classes", m.spec.num_classes)
      .add("class_names", m.spec.class_names)
      .add("mean", m.spec.mean)
      .add("std", m.spec.std)
      .add("splits", splits);
  return root.str() + "\n";
}

namespace {

using boost::property_tree::ptree;

template <typename T>
std::vector<T> array_of(const ptree& t, const std::string& key, const std::string& what) {
  std::vector<T> out;
  const auto child = t.get_child_optional(key);
  if (!child) throw Error(what + ": missing key '" + key + "'");
  for (const auto& [k, v] : *child) {
    const auto value = v.template get_value_optional<T>();
    if (!value || !v.empty()) throw Error(what + ": key '" + key + "' holds a malformed value '" + v.data() + "'");
    out.push_back(*value);
  }
  return out;
}

template <typename T>
T value_of(const ptree& t, const std::string& key, const std::string& what) {
  try {
    return t.get<T>(key);
  } catch (const boost::property_tree::ptree_error&) {
    throw Error(what + ": missing or malformed key '" + key + "'");
  }
}

}  // namespace

Manifest read_manifest(const std::string& dir) {
  const std::string path = dir + "/" + kManifestName;
  LOCKSTEP_REQUIRE(path_exists(dir), "dataset directory " + dir + " does not exist");
  LOCKSTEP_REQUIRE(path_exists(path),
                   path + ": no manifest (make shards with `lockstep shard`)");
  const ptree t = json_parse(read_text_file(path), path);
  const int version = value_of<int>(t, "lockstep_format", path);
  LOCKSTEP_REQUIRE(version == kShardFormatVersion,
                   path + ": format version " + std::to_string(version) + ", this lockstep reads " +
                       std::to_string(kShardFormatVersion));
  Manifest m;
  m.spec.name = t.get<std::string>("name", "");
  m.source = t.get<std::string>("source", "");
  m.source_fingerprint = t.get<std::string>("source_fingerprint", "");
  m.spec.sample_shape = array_of<int64_t>(t, "sample_shape", path);
  m.spec.dtype = dtype_from_name(value_of<std::string>(t, "dtype", path));
  m.spec.labeled = t.get<bool>("labeled", true);
  m.spec.num_classes = value_of<int64_t>(t, "num_classes", path);
  m.spec.class_names = array_of<std::string>(t, "class_names", path);
  m.spec.mean = array_of<double>(t, "mean", path);
  m.spec.std = array_of<double>(t, "std", path);
  m.dataset_id = t.get<std::string>("dataset_id", "");
  LOCKSTEP_REQUIRE(!m.spec.sample_shape.empty() && m.spec.sample_shape.size() <= 8,
                   path + ": sample_shape must have 1 to 8 dimensions");
  int64_t elems = 1;
  for (const int64_t d : m.spec.sample_shape) {
    LOCKSTEP_REQUIRE(d > 0 && d <= (int64_t{1} << 31) && elems <= (int64_t{1} << 40) / d,
                     path + ": sample_shape " + shape_text(m.spec.sample_shape) + " is not a valid sample size");
    elems *= d;
  }
  LOCKSTEP_REQUIRE(!m.spec.labeled || (m.spec.num_classes > 0 && m.spec.num_classes <= kMaxClasses),
                   path + ": num_classes " + std::to_string(m.spec.num_classes) + " is outside [1, " +
                       std::to_string(kMaxClasses) + "]");
  const size_t channels = static_cast<size_t>(m.spec.sample_shape[0]);
  LOCKSTEP_REQUIRE(m.spec.mean.size() == channels && m.spec.std.size() == channels,
                   path + ": mean/std have " + std::to_string(m.spec.mean.size()) + "/" +
                       std::to_string(m.spec.std.size()) + " entries for " + std::to_string(channels) + " channels");
  for (size_t c = 0; c < channels; ++c)
    LOCKSTEP_REQUIRE(std::isfinite(m.spec.mean[c]) && std::isfinite(m.spec.std[c]) && m.spec.std[c] > 0,
                     path + ": channel " + std::to_string(c) + " has mean " + std::to_string(m.spec.mean[c]) +
                         " / std " + std::to_string(m.spec.std[c]) + " (std must be finite and positive)");
  LOCKSTEP_REQUIRE(m.spec.class_names.empty() ||
                       static_cast<int64_t>(m.spec.class_names.size()) == m.spec.num_classes,
                   path + ": class_names has " + std::to_string(m.spec.class_names.size()) +
                       " names for " + std::to_string(m.spec.num_classes) + " classes");
  const auto splits = t.get_child_optional("splits");
  LOCKSTEP_REQUIRE(splits && !splits->empty(), path + ": no splits");
  for (const auto& [name, s] : *splits) {
    SplitEntry split;
    const auto shards = s.get_child_optional("shards");
    LOCKSTEP_REQUIRE(shards && !shards->empty(), path + ": split '" + name + "' has no shards");
    for (const auto& [unused, sh] : *shards) {
      ShardEntry e;
      e.file = value_of<std::string>(sh, "file", path);
      LOCKSTEP_REQUIRE(is_plain_file_name(e.file),
                       path + ": shard file '" + e.file + "' is not a plain file name in the dataset directory");
      e.count = value_of<int64_t>(sh, "count", path);
      LOCKSTEP_REQUIRE(e.count > 0, path + ": shard " + e.file + " has count " + std::to_string(e.count));
      e.histogram = array_of<int64_t>(sh, "histogram", path);
      for (const int64_t h : e.histogram)
        LOCKSTEP_REQUIRE(h >= 0, path + ": shard " + e.file + " has a negative histogram entry");
      const std::string crc = value_of<std::string>(sh, "crc32", path);
      LOCKSTEP_REQUIRE(crc.size() == 8 && crc.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos,
                       path + ": shard " + e.file + " has crc32 '" + crc + "', expected 8 hex digits");
      e.crc32 = static_cast<uint32_t>(std::stoul(crc, nullptr, 16));
      const int64_t hsum = std::accumulate(e.histogram.begin(), e.histogram.end(), int64_t{0});
      LOCKSTEP_REQUIRE(m.spec.labeled ? static_cast<int64_t>(e.histogram.size()) == m.spec.num_classes && hsum == e.count
                                      : e.histogram.empty(),
                       path + ": shard " + e.file + " histogram does not match its count");
      split.shards.push_back(std::move(e));
    }
    const int64_t declared = s.get<int64_t>("count", split.count());
    LOCKSTEP_REQUIRE(declared == split.count(), path + ": split '" + name + "' says " + std::to_string(declared) +
                                                    " samples, its shards hold " + std::to_string(split.count()));
    m.splits.emplace_back(name, std::move(split));
  }
  return m;
}

void write_manifest(const std::string& dir, const Manifest& m) {
  write_file_atomic(dir + "/" + kManifestName, manifest_to_json(m));
}

}  // namespace lockstep::io
