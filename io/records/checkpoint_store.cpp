// checkpoint_store: see checkpoint_store.hpp.
#include "io/records/checkpoint_store.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "core/base/error.hpp"
#include "io/util/file_util.hpp"

namespace lockstep::io {
namespace {

constexpr char kMagic[8] = {'L', 'S', 'C', 'K', 'P', 'T', '0', '1'};
constexpr size_t kHeaderBytes = 8 + 8 + 8 + 4;

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

uint32_t crc_of(const std::string& a, const std::string& b) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths: feed large payloads in 1 GiB pieces.
  for (const std::string* s : {&a, &b})
    for (size_t off = 0; off < s->size(); off += (1u << 30)) {
      const size_t n = std::min<size_t>(1u << 30, s->size() - off);
      crc = ::crc32(crc, reinterpret_cast<const Bytef*>(s->data() + off), static_cast<uInt>(n));
    }
  return static_cast<uint32_t>(crc);
}

struct Header {
  uint64_t meta_len = 0, payload_len = 0;
  uint32_t crc = 0;
};

Header parse_header(const char* h, int64_t file_bytes, const std::string& path) {
  LOCKSTEP_REQUIRE(std::memcmp(h, kMagic, 8) == 0, path + ": not a lockstep checkpoint (bad magic)");
  Header hd{get_le(h + 8, 8), get_le(h + 16, 8), static_cast<uint32_t>(get_le(h + 24, 4))};
  // Compared without adding the lengths: a header whose lengths wrap 2^64 must not pass.
  const uint64_t body = static_cast<uint64_t>(file_bytes) - kHeaderBytes;
  const bool fits = hd.meta_len <= body && hd.payload_len == body - hd.meta_len;
  // Longer than the header says (bytes appended, or another file written over it) is no truncation.
  const bool longer = hd.meta_len <= body && hd.payload_len < body - hd.meta_len;
  LOCKSTEP_REQUIRE(fits, path + (longer ? ": corrupt checkpoint: longer than its header says (" : ": truncated checkpoint (") +
                             std::to_string(file_bytes) + " bytes; the header says " + std::to_string(hd.meta_len) +
                             " bytes of metadata and " + std::to_string(hd.payload_len) + " of state after its " +
                             std::to_string(kHeaderBytes) + ")");
  return hd;
}

}  // namespace

std::string checkpoint_path(const std::string& dir, int64_t step) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "/step-%09lld.ckpt", static_cast<long long>(step));
  return dir + buf;
}

std::string write_checkpoint(const std::string& dir, int64_t step, const std::string& meta_json,
                             const std::string& payload) {
  const std::string path = checkpoint_path(dir, step);
  write_checkpoint_file(path, meta_json, payload);
  return path;
}

void write_checkpoint_file(const std::string& path, const std::string& meta_json, const std::string& payload) {
  // The directory must exist (the run made it): a deleted run dir is not recreated here.
  std::string out(kMagic, 8);
  put_le(out, meta_json.size(), 8);
  put_le(out, payload.size(), 8);
  put_le(out, crc_of(meta_json, payload), 4);
  out.reserve(out.size() + meta_json.size() + payload.size());
  out += meta_json;
  out += payload;
  write_file_atomic(path, out);
}

CheckpointData read_checkpoint(const std::string& path) {
  LOCKSTEP_REQUIRE(path_exists(path), path + ": checkpoint does not exist");
  const std::vector<char> bytes = read_binary_file(path);
  LOCKSTEP_REQUIRE(bytes.size() >= kHeaderBytes, path + ": truncated checkpoint (no header)");
  const Header h = parse_header(bytes.data(), static_cast<int64_t>(bytes.size()), path);
  CheckpointData d;
  d.meta_json.assign(bytes.data() + kHeaderBytes, h.meta_len);
  d.payload.assign(bytes.data() + kHeaderBytes + h.meta_len, h.payload_len);
  LOCKSTEP_REQUIRE(crc_of(d.meta_json, d.payload) == h.crc, path + ": checksum mismatch (corrupt checkpoint)");
  d.crc = h.crc;
  return d;
}

std::string read_checkpoint_meta(const std::string& path) {
  return read_checkpoint(path).meta_json;
}

std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> out;
  if (!is_directory(dir)) return out;
  for (const std::string& name : list_dir(dir)) {
    // Exactly "step-<digits>.ckpt": temp files ("...ckpt.tmp.123") do not match.
    const size_t prefix = 5, suffix = 5;
    if (name.size() <= prefix + suffix || name.compare(0, prefix, "step-") != 0 ||
        name.compare(name.size() - suffix, suffix, ".ckpt") != 0)
      continue;
    const std::string digits = name.substr(prefix, name.size() - prefix - suffix);
    // Digits that do not fit a step (more than 18) are no checkpoint of lockstep's either.
    if (digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    out.emplace_back(std::stoll(digits), dir + "/" + name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string find_latest_valid_checkpoint(const std::string& dir, std::vector<std::string>* skipped,
                                         const CheckpointCheck& check) {
  const auto all = list_checkpoints(dir);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    try {
      const CheckpointData d = read_checkpoint(it->second);
      const std::string why = check ? check(it->first, it->second, d) : "";
      if (why.empty()) return it->second;
      if (skipped) skipped->push_back(it->second + ": " + why);
    } catch (const Error& e) {
      if (skipped) skipped->push_back(e.what());
    }
  }
  return "";
}

std::vector<std::string> prune_checkpoints(const std::string& dir, int keep_last,
                                           const std::vector<std::string>& known_good) {
  std::vector<std::string> removed;
  if (keep_last <= 0) return removed;
  const auto all = list_checkpoints(dir);
  int valid = 0;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    const std::string& path = it->second;
    bool ok = std::find(known_good.begin(), known_good.end(), path) != known_good.end();
    if (!ok && valid < keep_last) {  // once KEEP_LAST valid ones are found, older files go unread
      try {
        read_checkpoint(path);
        ok = true;
      } catch (const Error&) {
        ok = false;
      }
    }
    if (valid >= keep_last) {
      remove_file(path);
      removed.push_back(path);
    } else if (ok) {
      ++valid;
    }
  }
  return removed;
}

std::string set_aside_checkpoints(const std::string& dir, int64_t step, const std::vector<std::string>& paths) {
  const std::string base = dir + "/superseded-at-step-" + std::to_string(step);
  std::string into = base;
  for (int i = 2; path_exists(into); ++i) into = base + "-" + std::to_string(i);
  make_dirs(into);
  for (const std::string& path : paths) {
    const std::string name = path.substr(path.find_last_of('/') + 1);
    if (std::rename(path.c_str(), (into + "/" + name).c_str()) != 0)
      throw Error("cannot move " + path + " into " + into + ": " + std::strerror(errno));
  }
  fsync_path(dir);
  fsync_path(into);
  return into;
}

}  // namespace lockstep::io
