// csv_text: a CSV field as RFC 4180 writes it (predict's class names, transcripts' texts).
#pragma once

#include <string>

namespace lockstep::io {

// S as one field: quoted, its quotes doubled, when it holds a comma, a quote or a line break
// (a class folder named "cat,black" shifted every later column of predict's rows).
inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace lockstep::io
