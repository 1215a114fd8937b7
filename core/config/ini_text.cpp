// ini_text: see ini_text.hpp.
#include "core/config/ini_text.hpp"

#include <cstdio>

#include "core/base/error.hpp"

namespace lockstep {
namespace {

constexpr const char* kBlank = " \t\r";

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(kBlank);
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(kBlank) - a + 1);
}

bool needs_quotes(const std::string& v) {
  if (v.empty() || v.front() == ' ' || v.front() == '\t' || v.back() == ' ' || v.back() == '\t') return true;
  for (const char c : v) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '#' || c == ';' || c == '"' || c == '\\' || u < 0x20 || u == 0x7f) return true;
  }
  return false;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The quoted value starting at LINE[AT] == '"'; fails naming WHERE.
std::string unquote(const std::string& line, size_t at, const std::string& where) {
  std::string out;
  size_t i = at + 1;
  for (;; ++i) {
    if (i >= line.size()) throw UsageError(where + ": a quoted value has no closing '\"'");
    const char c = line[i];
    if (c == '"') break;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i >= line.size()) throw UsageError(where + ": a quoted value ends in a lone '\\'");
    switch (line[i]) {
      case '\\': out += '\\'; break;
      case '"': out += '"'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'x': {
        const int hi = i + 2 < line.size() ? hex_digit(line[i + 1]) : -1;
        const int lo = hi >= 0 ? hex_digit(line[i + 2]) : -1;
        if (lo < 0) throw UsageError(where + ": \\x in a quoted value needs two hex digits");
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        break;
      }
      default:
        throw UsageError(where + ": unknown escape '\\" + std::string(1, line[i]) +
                         "' in a quoted value (\\\\ \\\" \\n \\r \\t \\xHH)");
    }
  }
  const std::string rest = trim(line.substr(i + 1));
  if (!rest.empty() && rest[0] != '#' && rest[0] != ';')
    throw UsageError(where + ": text after the closing '\"' of a quoted value");
  return out;
}

}  // namespace

std::string ini_value(const std::string& value) {
  if (!needs_quotes(value)) return value;
  std::string out = "\"";
  for (const char c : value) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (u < 0x20 || u == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", u);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::vector<IniEntry> parse_ini(const std::string& text, const std::string& name) {
  std::vector<IniEntry> out;
  std::string section;
  int number = 0;
  // A UTF-8 byte-order mark (Windows editors write one) is no part of the first line.
  for (size_t pos = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0; pos < text.size();) {
    const size_t end = text.find('\n', pos);
    const std::string raw = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? text.size() : end + 1;
    ++number;
    const std::string where = name + ":" + std::to_string(number);
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      const size_t close = line.find(']');
      const std::string rest = close == std::string::npos ? "" : trim(line.substr(close + 1));
      if (close == std::string::npos || (!rest.empty() && rest[0] != '#' && rest[0] != ';'))
        throw UsageError(where + ": a section header is \"[name]\", not '" + line + "'");
      section = trim(line.substr(1, close - 1));
      if (section.empty()) throw UsageError(where + ": an empty section name");
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string::npos) throw UsageError(where + ": expected \"key = value\", not '" + line + "'");
    const std::string key = trim(line.substr(0, eq));
    if (key.empty()) throw UsageError(where + ": a value with no key");
    const size_t v = line.find_first_not_of(kBlank, eq + 1);
    std::string value;
    if (v != std::string::npos && line[v] == '"') {
      value = unquote(line, v, where);
    } else if (v != std::string::npos) {
      // A comment starts at '#' or ';' after a blank: "r_hash#1" is a value (it was cut to
      // "r_hash", silently), "runs/x ; old" is "runs/x".
      // (A value that starts with one, `freeze = # later`, is all comment: the blank is before it.)
      size_t cut = std::string::npos;
      for (size_t i = v; i < line.size() && cut == std::string::npos; ++i)
        if ((line[i] == '#' || line[i] == ';') && (i == v || line[i - 1] == ' ' || line[i - 1] == '\t')) cut = i;
      value = trim(line.substr(v, cut == std::string::npos ? std::string::npos : cut - v));
    }
    out.push_back({section.empty() ? key : section + "." + key, value, number});
  }
  return out;
}

}  // namespace lockstep
