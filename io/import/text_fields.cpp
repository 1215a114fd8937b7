// text_fields: see text_fields.hpp.
#include "io/import/text_fields.hpp"

#include <cerrno>
#include <cstdlib>

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

bool parse_float(const std::string& s, float* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const float v = std::strtof(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE) return false;
  *out = v;
  return true;
}

}  // namespace lockstep::io
