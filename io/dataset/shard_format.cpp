// shard_format: see shard_format.hpp.
#include "io/dataset/shard_format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <set>

#include "core/base/error.hpp"
#include "io/util/file_util.hpp"
#include "io/util/json_io.hpp"

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

int64_t target_length(const DatasetSpec& spec, const int64_t* r) {
  const int64_t* t = record_targets(spec, r);
  int64_t n = 0;
  while (n < spec.max_target_length && t[n] >= 0) ++n;
  return n;
}

int64_t ctc_frames_needed(const int64_t* t, int64_t k) {
  int64_t needed = k;
  for (int64_t j = 1; j < k; ++j) needed += t[j] == t[j - 1] ? 1 : 0;
  return needed;
}

void validate_samples(const DatasetSpec& spec, const void* samples, const int64_t* records, int64_t n, int64_t first,
                      const std::string& where) {
  const int64_t w = spec.record_width();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* r = records + i * w;
    const std::string which = "sample " + std::to_string(first + i);
    if (spec.labeled)
      LOCKSTEP_REQUIRE(r[0] >= 0 && r[0] < spec.num_classes, where + ": label " + std::to_string(r[0]) + " of " + which +
                                                                 " is outside [0, " + std::to_string(spec.num_classes) + ")");
    const int64_t length = record_length(spec, r);
    if (spec.ragged)
      LOCKSTEP_REQUIRE(length >= 1 && length <= spec.time_steps(),
                       where + ": length " + std::to_string(length) + " of " + which + " is outside [1, " +
                           std::to_string(spec.time_steps()) + "]");
    if (!spec.sequence_targets()) continue;
    const int64_t* t = record_targets(spec, r);
    const int64_t len = target_length(spec, r);
    LOCKSTEP_REQUIRE(len > 0, where + ": " + which + " has an empty target sequence");
    for (int64_t k = 0; k < spec.max_target_length; ++k)
      LOCKSTEP_REQUIRE(k < len ? t[k] < static_cast<int64_t>(spec.tokens.size()) : t[k] == -1,
                       where + ": target token " + std::to_string(t[k]) + " at position " + std::to_string(k) + " of " +
                           which + " is outside [0, " + std::to_string(spec.tokens.size()) + ")" +
                           (k < len ? "" : " (or -1 padding)"));
  }
  float v = 0;
  const int64_t bad = first_nonfinite_sample(spec, samples, n, &v);
  LOCKSTEP_REQUIRE(bad < 0, where + ": sample " + std::to_string(first + bad) + " contains NaN or Inf");
}

int64_t first_nonfinite_sample(const DatasetSpec& spec, const void* samples, int64_t n, float* value) {
  if (spec.dtype != DType::kFloat32 && spec.dtype != DType::kFloat16) return -1;
  const int64_t elems = n * spec.sample_elems();
  const auto* bytes = static_cast<const unsigned char*>(samples);
  for (int64_t i = 0; i < elems; ++i) {
    float v = 0;
    if (spec.dtype == DType::kFloat32) {
      std::memcpy(&v, bytes + 4 * i, 4);
    } else {
      uint16_t h = 0;
      std::memcpy(&h, bytes + 2 * i, 2);
      v = half_to_float(h);
    }
    if (!std::isfinite(v)) {
      *value = v;
      return i / spec.sample_elems();
    }
  }
  return -1;
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
  return fmt::format("{}-{:05d}-of-{:05d}.h5", split, index, count);
}

std::string crc_hex(uint32_t crc) { return fmt::format("{:08x}", crc); }

std::string join_lines(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "\n" : "") + items[i];
  return out;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  for (size_t pos = 0; !text.empty() && pos <= text.size();) {
    const size_t nl = text.find('\n', pos);
    out.push_back(text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos));
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return out;
}

std::string normalisation_problem(const std::vector<double>& mean, const std::vector<double>& std, int64_t channels) {
  if (mean.size() != std.size() || (channels >= 0 && mean.size() != static_cast<size_t>(channels)))
    return channels >= 0 ? fmt::format("mean/std have {}/{} entries for {} channels", mean.size(), std.size(), channels)
                         : fmt::format("mean/std have {}/{} entries", mean.size(), std.size());
  for (size_t c = 0; c < mean.size(); ++c)
    if (!(std::isfinite(mean[c]) && std::fabs(mean[c]) <= 1e15 && std::isfinite(std[c]) && std[c] >= 1e-15 &&
          std[c] <= 1e15))
      return fmt::format("channel {} has mean {} / std {} (the mean must be within +-1e15 and the std must be "
                         "finite and positive, in [1e-15, 1e15]: anything else normalises samples into inf/NaN)",
                         c, mean[c], std[c]);
  return "";
}

std::string spec_problem(const DatasetSpec& spec) {
  if (spec.sample_shape.empty() || spec.sample_shape.size() > 8) return "sample_shape must have 1 to 8 dimensions";
  int64_t elems = 1;
  for (const int64_t d : spec.sample_shape) {
    if (!(d > 0 && d <= (int64_t{1} << 31) && elems <= (int64_t{1} << 40) / d))
      return "sample_shape " + shape_text(spec.sample_shape) + " is not a valid sample size";
    elems *= d;
  }
  if (spec.labeled && !(spec.num_classes > 0 && spec.num_classes <= kMaxClasses))
    return fmt::format("num_classes {} is outside [1, {}]", spec.num_classes, kMaxClasses);
  if (!spec.class_names.empty() && static_cast<int64_t>(spec.class_names.size()) != spec.num_classes)
    return fmt::format("class_names has {} names for {} classes", spec.class_names.size(), spec.num_classes);
  for (const std::string& n : spec.class_names)  // stored one per line (shard attributes, predictions)
    if (n.find_first_of("\r\n") != std::string::npos)
      return "class name '" + n.substr(0, n.find_first_of("\r\n")) + "...' holds a line break";
  if (spec.max_target_length < 0 || spec.max_target_length > 100000)
    return fmt::format("max_target_length {} is outside [0, 100000]", spec.max_target_length);
  if (spec.sequence_targets() &&
      (spec.labeled || spec.tokens.empty() || static_cast<int64_t>(spec.tokens.size()) > kMaxClasses))
    return "sequence targets need a token list and no class labels";
  if (!spec.sequence_targets() && !spec.tokens.empty()) return "a token list without sequence targets";
  if (spec.frame_table && (spec.sample_shape.size() != 4 || spec.ragged || spec.dtype != DType::kUInt8))
    return "a frame table for samples that are not fixed-length uint8 clips [C,T,H,W]";
  return "";
}

std::string manifest_to_json(const Manifest& m) {
  Json splits = Json::object();
  for (const auto& [name, split] : m.splits) {
    Json shards = Json::array();
    for (const auto& s : split.shards) {
      shards.push_back({{"file", s.file}, {"count", s.count}, {"histogram", s.histogram}, {"crc32", crc_hex(s.crc32)}});
      if (m.spec.frame_table) shards.back()["frames"] = s.frames;
    }
    splits[name] = {{"count", split.count()}, {"shards", shards}};
  }
  Json root = {{"lockstep_format", m.spec.format_version()},
                     {"name", m.spec.name},
                     {"source", m.source},
                     {"source_fingerprint", m.source_fingerprint},
                     {"dataset_id", m.dataset_id},
                     {"sample_order", m.sample_order == SampleOrder::kShuffled ? "shuffled" : "source"},
                     {"order_seed", m.order_seed},
                     {"sample_shape", m.spec.sample_shape},
                     {"dtype", dtype_name(m.spec.dtype)},
                     {"labeled", m.spec.labeled},
                     {"num_classes", m.spec.num_classes},
                     {"class_names", m.spec.class_names},
                     {"mean", m.spec.mean},
                     {"std", m.spec.std},
                     {"splits", splits}};
  if (m.skipped_inputs > 0) root["skipped_inputs"] = m.skipped_inputs;
  if (m.spec.format_version() >= 2) {
    root["ragged"] = m.spec.ragged;
    root["max_target_length"] = m.spec.max_target_length;
    root["tokens"] = m.spec.tokens;
  }
  if (m.spec.format_version() >= 3) root["frame_table"] = m.spec.frame_table;
  return dump_json(root) + "\n";
}

namespace {

void check_spec(const DatasetSpec& spec, const std::string& path) {
  const std::string problem = spec_problem(spec);
  LOCKSTEP_REQUIRE(problem.empty(), path + ": " + problem);
  const std::string norm = normalisation_problem(spec.mean, spec.std, spec.sample_shape[0]);
  LOCKSTEP_REQUIRE(norm.empty(), path + ": " + norm);
}

ShardEntry shard_from_json(const Json& sh, const DatasetSpec& spec, const std::string& path) {
  LOCKSTEP_REQUIRE(sh.is_object(), path + ": a shard entry is not an object");
  ShardEntry e;
  e.file = json_get<std::string>(sh, "file", path);
  LOCKSTEP_REQUIRE(is_plain_file_name(e.file),
                   path + ": shard file '" + e.file + "' is not a plain file name in the dataset directory");
  e.count = json_get<int64_t>(sh, "count", path);
  LOCKSTEP_REQUIRE(e.count > 0, fmt::format("{}: shard {} has count {}", path, e.file, e.count));
  e.histogram = json_get<std::vector<int64_t>>(sh, "histogram", path);
  for (const int64_t h : e.histogram)
    LOCKSTEP_REQUIRE(h >= 0, path + ": shard " + e.file + " has a negative histogram entry");
  const std::string crc = json_get<std::string>(sh, "crc32", path);
  LOCKSTEP_REQUIRE(crc.size() == 8 && crc.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos,
                   path + ": shard " + e.file + " has crc32 '" + crc + "', expected 8 hex digits");
  e.crc32 = static_cast<uint32_t>(std::stoul(crc, nullptr, 16));
  if (spec.frame_table) {
    e.frames = json_get<int64_t>(sh, "frames", path);
    LOCKSTEP_REQUIRE(e.frames > 0, fmt::format("{}: shard {} has {} frames", path, e.file, e.frames));
  }
  const int64_t hsum = std::accumulate(e.histogram.begin(), e.histogram.end(), int64_t{0});
  LOCKSTEP_REQUIRE(spec.labeled ? static_cast<int64_t>(e.histogram.size()) == spec.num_classes && hsum == e.count
                                : e.histogram.empty(),
                   path + ": shard " + e.file + " histogram does not match its count");
  return e;
}

}  // namespace

Manifest read_manifest(const std::string& dir) {
  const std::string path = dir + "/" + kManifestName;
  LOCKSTEP_REQUIRE(path_exists(dir), "dataset directory " + dir + " does not exist");
  LOCKSTEP_REQUIRE(path_exists(path), path + ": no manifest (make shards with `lockstep shard`)");
  const Json t = parse_json(read_text_file(path), path);
  LOCKSTEP_REQUIRE(t.is_object(), path + ": not a JSON object");
  const int version = json_get<int>(t, "lockstep_format", path);
  LOCKSTEP_REQUIRE(version >= 1 && version <= kShardFormatVersion,
                   fmt::format("{}: format version {}, this lockstep reads 1 to {}", path, version, kShardFormatVersion));
  Manifest m;
  m.spec.name = json_get_or<std::string>(t, "name", "", path);
  m.source = json_get_or<std::string>(t, "source", "", path);
  m.source_fingerprint = json_get_or<std::string>(t, "source_fingerprint", "", path);
  m.dataset_id = json_get_or<std::string>(t, "dataset_id", "", path);
  const std::string order = json_get_or<std::string>(t, "sample_order", "source", path);
  LOCKSTEP_REQUIRE(order == "source" || order == "shuffled",
                   path + ": sample_order '" + order + "' is neither 'source' nor 'shuffled'");
  m.sample_order = order == "shuffled" ? SampleOrder::kShuffled : SampleOrder::kSource;
  m.order_seed = json_get_or<uint64_t>(t, "order_seed", 0, path);
  m.skipped_inputs = json_get_or<int64_t>(t, "skipped_inputs", 0, path);
  m.spec.sample_shape = json_get<std::vector<int64_t>>(t, "sample_shape", path);
  m.spec.dtype = dtype_from_name(json_get<std::string>(t, "dtype", path));
  m.spec.labeled = json_get_or<bool>(t, "labeled", true, path);
  m.spec.num_classes = json_get<int64_t>(t, "num_classes", path);
  m.spec.class_names = json_get<std::vector<std::string>>(t, "class_names", path);
  m.spec.mean = json_get<std::vector<double>>(t, "mean", path);
  m.spec.std = json_get<std::vector<double>>(t, "std", path);
  if (version >= 2) {
    m.spec.ragged = json_get_or<bool>(t, "ragged", false, path);
    m.spec.max_target_length = json_get_or<int64_t>(t, "max_target_length", 0, path);
    m.spec.tokens = json_get_or<std::vector<std::string>>(t, "tokens", {}, path);
  }
  if (version >= 3) m.spec.frame_table = json_get_or<bool>(t, "frame_table", false, path);
  check_spec(m.spec, path);
  const auto splits = t.find("splits");
  LOCKSTEP_REQUIRE(splits != t.end() && splits->is_object() && !splits->empty(), path + ": no splits");
  std::set<std::string> files;
  for (const auto& [name, s] : splits->items()) {
    SplitEntry split;
    const auto shards = s.find("shards");
    LOCKSTEP_REQUIRE(s.is_object() && shards != s.end() && shards->is_array() && !shards->empty(),
                     path + ": split '" + name + "' has no shards");
    for (const auto& sh : *shards) {
      split.shards.push_back(shard_from_json(sh, m.spec, path));
      ShardEntry& e = split.shards.back();
      LOCKSTEP_REQUIRE(files.insert(e.file).second, path + ": shard " + e.file + " is listed twice (its samples would count twice)");
      e.split = name;
      e.index = static_cast<int64_t>(split.shards.size()) - 1;
      e.of = static_cast<int64_t>(shards->size());
    }
    const int64_t declared = json_get_or<int64_t>(s, "count", split.count(), path);
    LOCKSTEP_REQUIRE(declared == split.count(), fmt::format("{}: split '{}' says {} samples, its shards hold {}", path,
                                                            name, declared, split.count()));
    m.splits.emplace_back(name, std::move(split));
  }
  return m;
}

void write_manifest(const std::string& dir, const Manifest& m) {
  write_file_atomic(dir + "/" + kManifestName, manifest_to_json(m));
}

}  // namespace lockstep::io
