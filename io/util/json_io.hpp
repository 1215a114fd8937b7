// json_io: every JSON lockstep reads or writes goes through nlohmann-json, with lockstep's
// rules on top: a parse or type error names the file (WHAT) and the key; writing never
// throws on bytes that are not UTF-8 (paths are bytes: such bytes become U+FFFD) and
// writes non-finite numbers as null ("not measured").
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/base/error.hpp"

namespace lockstep::io {

// Objects keep the order their fields were written in (a manifest's splits, a row's columns).
using Json = nlohmann::ordered_json;

// Parses TEXT; throws Error("WHAT: not valid JSON (...)").
Json parse_json(const std::string& text, const std::string& what);
// One line, no trailing newline.
std::string dump_json(const Json& j);

// J[KEY] as T; throws Error naming WHAT and KEY when it is missing or of another type.
template <typename T>
T json_get(const Json& j, const char* key, const std::string& what) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) throw Error(what + ": missing key '" + std::string(key) + "'");
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(what + ": key '" + std::string(key) + "' holds a malformed value " + it->dump());
  }
}

// J[KEY] as T, or FALLBACK when absent or null.
template <typename T>
T json_get_or(const Json& j, const char* key, const T& fallback, const std::string& what) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return json_get<T>(j, key, what);
}

}  // namespace lockstep::io
