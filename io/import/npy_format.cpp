// npy_format: see npy_format.hpp.
#include "io/import/npy_format.hpp"

#include <cstring>
#include <utility>

#include "core/base/error.hpp"

namespace lockstep::io {
namespace {

constexpr unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr int64_t kMaxElements = int64_t{1} << 40;
constexpr int64_t kMaxHeaderBytes = 1 << 16;  // numpy itself refuses headers over 10000 bytes by default

// A cursor over the header's dict literal: the part of Python's literal syntax numpy writes
// (quoted strings, True/False, a tuple of non-negative integers).
class HeaderText {
 public:
  HeaderText(std::string text, std::string what) : s_(std::move(text)), what_(std::move(what)) {}

  bool accept(char c) {
    skip_space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }
  char peek() {
    skip_space();
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  bool at_end() {
    skip_space();
    return i_ >= s_.size();
  }
  std::string quoted() {
    skip_space();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) fail("expected a quoted string");
    const char q = s_[i_++];
    const size_t end = s_.find(q, i_);
    if (end == std::string::npos) fail("an unterminated string");
    std::string out = s_.substr(i_, end - i_);
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      if (s_.compare(i_, std::strlen(word), word) == 0) {
        i_ += std::strlen(word);
        return value;
      }
    }
    fail("expected True or False for 'fortran_order'");
  }
  int64_t integer() {
    skip_space();
    int64_t v = 0;
    size_t digits = 0;
    for (; i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9'; ++i_, ++digits) {
      if (v > kMaxElements) fail("a dimension over 2^40");
      v = v * 10 + (s_[i_] - '0');
    }
    if (digits == 0) fail("expected a non-negative integer in 'shape'");
    if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // written by Python 2
    return v;
  }
  [[noreturn]] void fail(const std::string& msg) const {
    std::string shown = s_.substr(0, 100);
    for (char& c : shown)
      if (c < 0x20 || c > 0x7e) c = '?';
    throw Error(what_ + ": not a valid .npy header: " + msg + " at character " + std::to_string(i_) + " of \"" +
                shown + (s_.size() > 100 ? "..." : "") + "\"");
  }

 private:
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  std::string s_, what_;
  size_t i_ = 0;
};

// Fills kind, item_bytes and big_endian from a descr such as '<f4', refusing by name what
// lockstep does not read.
void parse_descr(const std::string& d, const std::string& what, NpyHeader* h) {
  const std::string hint = "; save a numeric array (e.g. x.astype(np.float32))";
  if (d.size() < 2 || std::strchr("<>|=", d[0]) == nullptr)
    throw Error(what + ": unknown array type '" + d + "'" + hint);
  const char kind = d[1];
  if (kind == 'O')
    throw Error(what + ": an object array (pickled Python objects), which lockstep never loads" + hint);
  if (kind == 'S' || kind == 'a' || kind == 'U') throw Error(what + ": an array of strings ('" + d + "')" + hint);
  if (kind == 'c') throw Error(what + ": an array of complex numbers ('" + d + "')" + hint);
  if (kind == 'M' || kind == 'm') throw Error(what + ": an array of dates or times ('" + d + "')" + hint);
  if (kind == 'V') throw Error(what + ": an array of raw records ('" + d + "')" + hint);
  const std::string size = d.substr(2);
  const int bytes = size == "1" ? 1 : size == "2" ? 2 : size == "4" ? 4 : size == "8" ? 8 : 0;
  const bool ok = (kind == 'b' && bytes == 1) || ((kind == 'i' || kind == 'u') && bytes > 0) ||
                  (kind == 'f' && bytes >= 2);
  if (!ok) throw Error(what + ": array type '" + d + "' is not one lockstep reads (bool, int/uint 8-64, float 16-64)" + hint);
  h->kind = kind;
  h->item_bytes = bytes;
  h->big_endian = d[0] == '>' && bytes > 1;
}

template <typename T>
T load_scalar(const unsigned char* p, bool swap) {
  unsigned char b[sizeof(T)];
  if (swap) {
    for (size_t k = 0; k < sizeof(T); ++k) b[k] = p[sizeof(T) - 1 - k];
  } else {
    std::memcpy(b, p, sizeof(T));
  }
  T v;
  std::memcpy(&v, b, sizeof(T));
  return v;
}

template <typename Src, typename Dst>
void convert_as(const unsigned char* in, int64_t n, bool swap, void* out) {
  Dst* o = static_cast<Dst*>(out);
  for (int64_t k = 0; k < n; ++k) o[k] = static_cast<Dst>(load_scalar<Src>(in + k * static_cast<int64_t>(sizeof(Src)), swap));
}

}  // namespace

int64_t NpyHeader::count() const {
  int64_t n = 1;
  for (const int64_t d : shape) n *= d;
  return n;
}

int64_t npy_header_bytes(const unsigned char* first, size_t n, const std::string& what) {
  if (n >= 1 && first[0] == 0x80)
    throw Error(what + ": a Python pickle, not a .npy array: lockstep never loads pickles (save with np.save)");
  if (n < 10 || std::memcmp(first, kMagic, sizeof kMagic) != 0)
    throw Error(what + ": not a .npy array (no \\x93NUMPY magic at its start)");
  const int major = first[6];
  if (major < 1 || major > 3 || first[7] != 0)
    throw Error(what + ": .npy format version " + std::to_string(major) + "." + std::to_string(first[7]) +
                " (lockstep reads 1.0, 2.0 and 3.0)");
  int64_t len = 0, pre = 10;
  if (major == 1) {
    len = first[8] | (int64_t{first[9]} << 8);
  } else {
    if (n < 12) throw Error(what + ": too short for a .npy header");
    pre = 12;
    len = first[8] | (int64_t{first[9]} << 8) | (int64_t{first[10]} << 16) | (int64_t{first[11]} << 24);
  }
  if (len > kMaxHeaderBytes)
    throw Error(what + ": a .npy header of " + std::to_string(len) + " bytes (at most " +
                std::to_string(kMaxHeaderBytes) + " are read)");
  return pre + len;
}

NpyHeader parse_npy_header(const unsigned char* bytes, size_t n, const std::string& what) {
  const int64_t total = npy_header_bytes(bytes, n, what);
  if (static_cast<int64_t>(n) < total) throw Error(what + ": truncated .npy header");
  const int64_t pre = bytes[6] == 1 ? 10 : 12;
  HeaderText t(std::string(reinterpret_cast<const char*>(bytes) + pre, static_cast<size_t>(total - pre)), what);
  NpyHeader h;
  h.data_offset = total;
  bool seen_descr = false, seen_order = false, seen_shape = false;
  t.expect('{');
  while (!t.accept('}')) {
    const std::string key = t.quoted();
    t.expect(':');
    if (key == "descr" && !seen_descr) {
      if (t.peek() == '[')
        throw Error(what + ": a structured (record) array; save each field as its own numeric array");
      h.descr = t.quoted();
      parse_descr(h.descr, what, &h);
      seen_descr = true;
    } else if (key == "fortran_order" && !seen_order) {
      h.fortran_order = t.boolean();
      seen_order = true;
    } else if (key == "shape" && !seen_shape) {
      t.expect('(');
      while (!t.accept(')')) {
        h.shape.push_back(t.integer());
        if (h.shape.size() > 32) t.fail("more than 32 dimensions");
        if (!t.accept(',') && t.peek() != ')') t.fail("expected ',' or ')' in 'shape'");
      }
      seen_shape = true;
    } else {
      t.fail("unexpected or repeated key '" + key + "'");
    }
    if (!t.accept(',') && t.peek() != '}') t.fail("expected ',' or '}'");
  }
  if (!t.at_end()) t.fail("text after the closing '}'");
  if (!seen_descr || !seen_order || !seen_shape) t.fail("'descr', 'fortran_order' and 'shape' are all required");
  int64_t count = 1;
  for (const int64_t d : h.shape) {
    if (d != 0 && count > kMaxElements / d)
      throw Error(what + ": its shape claims more than 2^40 elements");
    count *= d;
  }
  return h;
}

DType npy_store_dtype(const NpyHeader& h) {
  if (h.kind == 'b' || (h.kind == 'u' && h.item_bytes == 1)) return DType::kUInt8;
  if (h.kind == 'i' && h.item_bytes <= 2) return DType::kInt16;
  if (h.kind == 'f' && h.item_bytes == 2) return DType::kFloat16;
  return DType::kFloat32;
}

void npy_convert(const NpyHeader& h, const unsigned char* in, int64_t n, DType to, void* out) {
  LOCKSTEP_REQUIRE(to == npy_store_dtype(h), "npy_convert: " + h.descr + " is stored as " + dtype_name(npy_store_dtype(h)));
  const bool swap = h.big_endian;
  const int b = h.item_bytes;
  if (h.kind == 'b' || (h.kind == 'u' && b == 1)) {
    std::memcpy(out, in, static_cast<size_t>(n));
  } else if (h.kind == 'i' && b == 1) {
    convert_as<int8_t, int16_t>(in, n, false, out);
  } else if (h.kind == 'i' && b == 2) {
    convert_as<int16_t, int16_t>(in, n, swap, out);
  } else if (h.kind == 'f' && b == 2) {
    convert_as<uint16_t, uint16_t>(in, n, swap, out);  // float16 bits, kept
  } else if (h.kind == 'f' && b == 4) {
    convert_as<float, float>(in, n, swap, out);
  } else if (h.kind == 'f') {
    convert_as<double, float>(in, n, swap, out);
  } else if (h.kind == 'u' && b == 2) {
    convert_as<uint16_t, float>(in, n, swap, out);
  } else if (b == 4) {
    h.kind == 'i' ? convert_as<int32_t, float>(in, n, swap, out) : convert_as<uint32_t, float>(in, n, swap, out);
  } else {
    h.kind == 'i' ? convert_as<int64_t, float>(in, n, swap, out) : convert_as<uint64_t, float>(in, n, swap, out);
  }
}

void npy_to_int64(const NpyHeader& h, const unsigned char* in, int64_t n, int64_t* out, const std::string& what) {
  if (h.kind == 'f')
    throw Error(what + ": labels must be integers, not '" + h.descr + "' (save them as y.astype(np.int64))");
  const bool swap = h.big_endian;
  const bool u = h.kind != 'i';
  switch (h.item_bytes) {
    case 1: u ? convert_as<uint8_t, int64_t>(in, n, false, out) : convert_as<int8_t, int64_t>(in, n, false, out); break;
    case 2: u ? convert_as<uint16_t, int64_t>(in, n, swap, out) : convert_as<int16_t, int64_t>(in, n, swap, out); break;
    case 4: u ? convert_as<uint32_t, int64_t>(in, n, swap, out) : convert_as<int32_t, int64_t>(in, n, swap, out); break;
    default:
      if (u) {  // a uint64 over int64's range would wrap negative: refused by the caller's range check
        for (int64_t k = 0; k < n; ++k) {
          const uint64_t v = load_scalar<uint64_t>(in + 8 * k, swap);
          out[k] = v > uint64_t{INT64_MAX} ? -1 : static_cast<int64_t>(v);
        }
      } else {
        convert_as<int64_t, int64_t>(in, n, swap, out);
      }
  }
}

void npy_fortran_to_c(const NpyHeader& h, std::vector<unsigned char>* data) {
  const size_t dims = h.shape.size();
  const int64_t count = h.count();
  if (dims < 2 || count <= 1) return;
  const size_t b = static_cast<size_t>(h.item_bytes);
  LOCKSTEP_REQUIRE(static_cast<int64_t>(data->size()) == count * h.item_bytes, "npy_fortran_to_c: wrong data size");
  std::vector<int64_t> stride(dims), index(dims, 0);  // Fortran strides in elements: axis 0 fastest
  stride[0] = 1;
  for (size_t a = 1; a < dims; ++a) stride[a] = stride[a - 1] * h.shape[a - 1];
  std::vector<unsigned char> c(data->size());
  int64_t from = 0;  // Fortran offset of the C-order element being written
  for (int64_t k = 0; k < count; ++k) {
    std::memcpy(c.data() + static_cast<size_t>(k) * b, data->data() + static_cast<size_t>(from) * b, b);
    for (size_t a = dims; a-- > 0;) {  // C order: the last axis fastest
      if (++index[a] < h.shape[a]) {
        from += stride[a];
        break;
      }
      index[a] = 0;
      from -= stride[a] * (h.shape[a] - 1);
    }
  }
  data->swap(c);
}

}  // namespace lockstep::io
