// text_fields: see text_fields.hpp.
#include "io/import/text_fields.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/base/error.hpp"

namespace lockstep::io {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<std::string> split_fields(const std::string& line, char delim) {
  std::vector<std::string> out;
  if (delim == ' ') {  // runs of spaces and tabs separate; none leads or trails
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
      const size_t b = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
      if (i > b) out.push_back(line.substr(b, i - b));
    }
    return out;
  }
  size_t start = 0;
  for (;;) {
    const size_t pos = line.find(delim, start);
    out.push_back(trim(line.substr(start, pos == std::string::npos ? std::string::npos : pos - start)));
    if (pos == std::string::npos) return out;
    start = pos + 1;
  }
}

std::vector<std::string> split_quoted_fields(const std::string& line, char delim, const std::string& file,
                                             int64_t line_no) {
  if (delim == ' ') return split_fields(line, ' ');  // runs of blanks: no quoting
  std::vector<std::string> out;
  const size_t n = line.size();
  const auto blank = [&](size_t i) {
    return i < n && line[i] != delim && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r');
  };
  const auto where = [&] { return file + ":" + std::to_string(line_no); };  // built for an error only
  size_t i = 0;
  for (;;) {
    size_t b = i;
    while (blank(b)) ++b;
    if (b < n && line[b] == '"') {
      std::string field;
      for (i = b + 1;; ++i) {
        if (i >= n)
          throw Error(where() + ": a quoted field is not closed (a quote missing, or a line break inside quotes, "
                              "which lockstep does not read)");
        if (line[i] != '"') {
          field += line[i];
        } else if (i + 1 < n && line[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          break;
        }
      }
      ++i;
      while (blank(i)) ++i;
      if (i < n && line[i] != delim)
        throw Error(where() + ": text after the closing quote of field " + std::to_string(out.size() + 1) +
                    " (a quote inside a quoted field is written twice: \"\")");
      out.push_back(std::move(field));
    } else {
      while (i < n && line[i] != delim) ++i;
      out.push_back(trim(line.substr(b, i - b)));
    }
    if (i >= n) return out;
    ++i;  // the delimiter
  }
}

bool parse_float(const std::string& s, float* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const float v = std::strtof(s.c_str(), &end);
  // ERANGE is also an underflow (1e-40: a denormal or 0), a finite value; only an overflow
  // (inf) is not one (a hostile finding: 1e-40 was "not a finite number").
  if (end != s.c_str() + s.size() || (errno == ERANGE && std::isinf(v))) return false;
  *out = v;
  return true;
}

}  // namespace lockstep::io
