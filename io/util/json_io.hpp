// json_io: every JSON lockstep reads or writes goes through nlohmann-json, with lockstep's
// rules on top: a parse or type error names the file (WHAT) and the key; writing never
// throws on bytes that are not UTF-8 (paths are bytes: such bytes become U+FFFD) and
// writes non-finite numbers as null ("not measured").
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "core/base/error.hpp"

namespace lockstep::io {

// Objects keep the order their fields were written in (a manifest's splits, a row's columns).
using Json = nlohmann::ordered_json;

// Parses TEXT; throws Error("WHAT: not valid JSON (...)").
Json parse_json(const std::string& text, const std::string& what);
// One line, no trailing newline.
std::string dump_json(const Json& j);

namespace detail {

template <typename T>
struct IsVector : std::false_type {};
template <typename T, typename A>
struct IsVector<std::vector<T, A>> : std::true_type {};

}  // namespace detail

namespace detail {

// I / U into *OUT when T holds it.
template <typename T>
bool fit_integer(int64_t i, T* out) {
  using Lim = std::numeric_limits<T>;
  if (i < 0 ? (!Lim::is_signed || i < static_cast<int64_t>(Lim::min()))
            : static_cast<uint64_t>(i) > static_cast<uint64_t>(Lim::max()))
    return false;
  *out = static_cast<T>(i);
  return true;
}
template <typename T>
bool fit_integer(uint64_t u, T* out) {
  if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) return false;
  *out = static_cast<T>(u);
  return true;
}

}  // namespace detail

// V as the integer type T into OUT when it is a JSON integer in T's range, or a float with
// an integral value in that range; false (OUT untouched) otherwise.
template <typename T>
bool json_integer(const Json& v, T* out) {
  if (v.is_number_unsigned()) return detail::fit_integer(v.get<uint64_t>(), out);
  if (v.is_number_integer()) return detail::fit_integer(v.get<int64_t>(), out);
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  // -2^63 and 2^64 are exact doubles: a negative integral d at or above the first converts
  // to int64 without overflow, a non-negative one below the second to uint64.
  if (!std::isfinite(d) || d != std::trunc(d) || d < -9223372036854775808.0 || d >= 18446744073709551616.0)
    return false;
  return d < 0 ? detail::fit_integer(static_cast<int64_t>(d), out) : detail::fit_integer(static_cast<uint64_t>(d), out);
}

namespace detail {

[[noreturn]] void json_malformed(const Json& v, const std::string& what);

}  // namespace detail

// V as T, checked. nlohmann's own get<T>() turns a float or a wider integer into an integer
// type (or a double into a float) with a plain cast, undefined behaviour when out of range
// (found by fuzz_manifest: "lockstep_format": 1e300). Here an integer type takes only an
// integer in its range (or an integral float in it), float only a number in its range,
// bool only true/false, a vector each element by these rules. Every read of a file's JSON
// goes through this (or json_get, which uses it). Throws Error("WHAT: malformed value V").
template <typename T>
T json_as(const Json& v, const std::string& what) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) detail::json_malformed(v, what);
    return v.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    T out{};
    if (!json_integer(v, &out)) detail::json_malformed(v, what);
    return out;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) detail::json_malformed(v, what);
    const double d = v.get<double>();
    if (std::is_same_v<T, float> && std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max())
      detail::json_malformed(v, what);
    return static_cast<T>(d);
  } else if constexpr (detail::IsVector<T>::value) {
    if (!v.is_array()) detail::json_malformed(v, what);
    T out;
    out.reserve(v.size());
    try {
      for (const auto& e : v) out.push_back(json_as<typename T::value_type>(e, what));
    } catch (const Error&) {
      detail::json_malformed(v, what);  // the message shows the whole array
    }
    return out;
  } else {
    try {
      return v.get<T>();
    } catch (const nlohmann::json::exception&) {
      detail::json_malformed(v, what);
    }
  }
}

// J[KEY] as T (by json_as's rules); throws Error naming WHAT and KEY when it is missing or
// of another type.
template <typename T>
T json_get(const Json& j, const char* key, const std::string& what) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) throw Error(what + ": missing key '" + std::string(key) + "'");
  return json_as<T>(*it, what + ": key '" + std::string(key) + "'");
}

// J[KEY] as T, or FALLBACK when absent or null.
template <typename T>
T json_get_or(const Json& j, const char* key, const T& fallback, const std::string& what) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return json_get<T>(j, key, what);
}

}  // namespace lockstep::io
