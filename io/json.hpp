// json: the small amount of JSON lockstep writes (manifest, metrics rows, checkpoint
// metadata) and reads back (through Boost.PropertyTree).
//
// JsonObject builds one object in insertion order; numbers are written with enough
// digits to round-trip. Reading returns a boost::property_tree::ptree; the helpers below
// name the missing or malformed key in their error.
#pragma once

#include <boost/property_tree/ptree_fwd.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::io {

class JsonObject {
 public:
  JsonObject& add(const std::string& key, const std::string& value);
  JsonObject& add(const std::string& key, const char* value);
  JsonObject& add(const std::string& key, double value);
  JsonObject& add(const std::string& key, int64_t value);
  JsonObject& add(const std::string& key, int value) { return add(key, int64_t{value}); }
  JsonObject& add(const std::string& key, bool value);
  JsonObject& add(const std::string& key, const std::vector<int64_t>& values);
  JsonObject& add(const std::string& key, const std::vector<double>& values);
  JsonObject& add(const std::string& key, const std::vector<std::string>& values);
  JsonObject& add(const std::string& key, const JsonObject& nested);
  JsonObject& add_array(const std::string& key, const std::vector<JsonObject>& items);
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(const std::string& k);
  std::string body_;
};

std::string json_quote(const std::string& s);
std::string json_number(double v);

// Parses TEXT; WHAT names the source (a file path) in errors.
boost::property_tree::ptree json_parse(const std::string& text, const std::string& what);

}  // namespace lockstep::io
