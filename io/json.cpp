// json: see json.hpp.
#include "io/json.hpp"

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/error.hpp"

namespace lockstep::io {

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";  // JSON has no NaN/Inf; readers see a missing value
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void JsonObject::key(const std::string& k) {
  if (!body_.empty()) body_ += ", ";
  body_ += json_quote(k) + ": ";
}

JsonObject& JsonObject::add(const std::string& k, const std::string& v) {
  key(k);
  body_ += json_quote(v);
  return *this;
}

JsonObject& JsonObject::add(const std::string& k, const char* v) {
  return add(k, std::string(v));
}

JsonObject& JsonObject::add(const std::string& k, double v) {
  key(k);
  body_ += json_number(v);
  return *this;
}

JsonObject& JsonObject::add(const std::string& k, int64_t v) {
  key(k);
  body_ += std::to_string(v);
  return *this;
}

JsonObject& JsonObject::add(const std::string& k, bool v) {
  key(k);
  body_ += v ? "true" : "false";
  return *this;
}

JsonObject& JsonObject::add(const std::string& k, const std::vector<int64_t>& v) {
  key(k);
  body_ += "[";
  for (size_t i = 0; i < v.size(); ++i) body_ += (i ? ", " : "") + std::to_string(v[i]);
  body_ += "]";
  return *this;
}

JsonObject& JsonObject::add(const std::string& k, const std::vector<double>& v) {
  key(k);
  body_ += "[";
  for (size_t i = 0; i < v.size(); ++i) body_ += (i ? ", " : "") + json_number(v[i]);
  body_ += "]";
  return *this;
}

JsonObject& JsonObject::add(const std::string& k, const std::vector<std::string>& v) {
  key(k);
  body_ += "[";
  for (size_t i = 0; i < v.size(); ++i) body_ += (i ? ", " : "") + json_quote(v[i]);
  body_ += "]";
  return *this;
}

JsonObject& JsonObject::add(const std::string& k, const JsonObject& nested) {
  key(k);
  body_ += nested.str();
  return *this;
}

JsonObject& JsonObject::add_array(const std::string& k, const std::vector<JsonObject>& items) {
  key(k);
  body_ += "[";
  for (size_t i = 0; i < items.size(); ++i) body_ += (i ? ", " : "") + items[i].str();
  body_ += "]";
  return *this;
}

boost::property_tree::ptree json_parse(const std::string& text, const std::string& what) {
  boost::property_tree::ptree tree;
  std::istringstream in(text);
  try {
    boost::property_tree::read_json(in, tree);
  } catch (const boost::property_tree::json_parser_error& e) {
    throw Error(what + ": not valid JSON (line " + std::to_string(e.line()) + ": " +
                e.message() + ")");
  }
  return tree;
}

}  // namespace lockstep::io
