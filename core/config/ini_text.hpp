// ini_text: the INI text of job files and of a run's config.ini, written so that every
// value reads back byte for byte.
//
// A line is blank, a comment (first non-blank character '#' or ';'), "[section]", or
// "key = value". A value is either
//   - bare: the rest of the line, trimmed, up to a '#' (an inline comment, as in the
//     job files people write by hand), or
//   - quoted: "..." with \\ \" \n \r \t and \xHH escapes, then only blanks or a comment.
// ini_value() quotes exactly the values a bare value cannot carry: empty ones, ones with
// '#', ';', '"', '\', a control character, or leading/trailing blanks (a path such as
// /data/run#3 or one with a newline). Boost's own INI parser cut a value at any '#': a
// config.ini written for a run in "exp#2" read back as another directory.
#pragma once

#include <string>
#include <vector>

namespace lockstep {

struct IniEntry {
  std::string key;    // "section.key" ("key" before any section)
  std::string value;  // unescaped
  int line = 0;       // 1-based
};

// The text to write after "key = " so that parse_ini reads VALUE back.
std::string ini_value(const std::string& value);
// Parses TEXT; errors throw UsageError "NAME:LINE: ..." (NAME: the file, for messages).
std::vector<IniEntry> parse_ini(const std::string& text, const std::string& name);

}  // namespace lockstep
