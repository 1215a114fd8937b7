// json_io: see json_io.hpp.
#include "io/util/json_io.hpp"

namespace lockstep::io {

Json parse_json(const std::string& text, const std::string& what) {
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(what + ": not valid JSON (byte " + std::to_string(e.byte) + ": " + e.what() + ")");
  } catch (const nlohmann::json::exception& e) {  // a number too large for a double (found by fuzz_manifest)
    throw Error(what + ": not valid JSON (" + e.what() + ")");
  }
}

namespace detail {

void json_malformed(const Json& v, const std::string& what) {
  std::string text = dump_json(v);
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  throw Error(what + " holds a malformed value " + text);
}

}  // namespace detail

std::string dump_json(const Json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

}  // namespace lockstep::io
