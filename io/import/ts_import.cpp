// ts_import: see ts_import.hpp.
#include "io/import/ts_import.hpp"
#include "io/util/file_util.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "core/base/error.hpp"
#include "io/import/text_fields.hpp"

namespace lockstep::io {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// A header count (@dimensions, @seriesLength): a positive integer below 2^31.
int64_t header_count(const std::string& v, const std::string& where) {
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  LOCKSTEP_REQUIRE(
      !v.empty() && end == v.c_str() + v.size() && errno == 0 && n > 0 && n < (1LL << 31),
      where + ": '" + v + "' is not a positive count");
  return n;
}

// Appends one comma-separated series (TEXT, trimmed) to OUT; returns its length.
int64_t parse_series(const std::string& text, const std::string& where, int64_t dim,
                     std::vector<float>* out) {
  LOCKSTEP_REQUIRE(!text.empty(),
                   where + ": dimension " + std::to_string(dim) + " is an empty series");
  int64_t n = 0;
  for (const std::string& f : split_fields(text, ',')) {
    LOCKSTEP_REQUIRE(f != "?", where + ": dimension " + std::to_string(dim) +
                                   " has a missing value ('?'); " +
                                   "fill or drop it before import");
    float v = 0;
    LOCKSTEP_REQUIRE(
        parse_float(f, &v) && std::isfinite(v),
        where + ": dimension " + std::to_string(dim) + " value '" + f.substr(0, 40) +
            "' is not a finite number");
    out->push_back(v);
    ++n;
  }
  return n;
}

}  // namespace

TsTable parse_ts(std::istream& in, const std::string& path) {
  TsTable t;
  t.path = path;
  bool labeled = false, saw_class_label = false, in_data = false;
  int64_t declared_dims = 0, declared_length = 0;
  std::string line;
  int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string where = path + ":" + std::to_string(lineno);
    const std::string s = trim(line);
    if (s.empty() || s[0] == '#' || s[0] == '%')
      continue;  // '%': ARFF-style comments, in some archive files
    if (!in_data) {
      LOCKSTEP_REQUIRE(s[0] == '@',
                       where + ": expected a '@' header line or '@data' before the cases");
      const std::vector<std::string> w = split_fields(s, ' ');
      const std::string key = lower(w[0]);
      const std::string value = w.size() > 1 ? lower(w[1]) : "";
      if (key == "@data") {
        in_data = true;
      } else if (key == "@timestamps") {
        LOCKSTEP_REQUIRE(value != "true",
                         where + ": timestamped series (@timeStamps true) are not supported");
      } else if (key == "@targetlabel") {
        LOCKSTEP_REQUIRE(value != "true",
                         where + ": a regression problem (@targetLabel true), not classification");
      } else if (key == "@dimensions") {
        declared_dims = header_count(w.size() > 1 ? w[1] : "", where);
      } else if (key == "@serieslength") {
        declared_length = header_count(w.size() > 1 ? w[1] : "", where);
      } else if (key == "@classlabel") {
        LOCKSTEP_REQUIRE(value == "true" || value == "false",
                         where + ": @classLabel must be followed by true or false");
        saw_class_label = true;
        labeled = value == "true";
        t.classes.assign(w.begin() + 2, w.end());
        LOCKSTEP_REQUIRE(!labeled || !t.classes.empty(),
                         where + ": @classLabel true declares no class labels");
        LOCKSTEP_REQUIRE(static_cast<int64_t>(t.classes.size()) < kMaxClasses,
                         where + ": too many classes");
        for (size_t i = 0; i < t.classes.size(); ++i)
          LOCKSTEP_REQUIRE(
              std::find(t.classes.begin(), t.classes.begin() + static_cast<std::ptrdiff_t>(i),
                        t.classes[i]) == t.classes.begin() + static_cast<std::ptrdiff_t>(i),
              where + ": class label '" + t.classes[i] + "' is declared twice");
      }
      // Other keys (@problemName, @missing, @univariate, @equalLength) describe what the
      // cases are checked against anyway.
      continue;
    }
    if (t.cases == 0)
      LOCKSTEP_REQUIRE(saw_class_label, path + ": no @classLabel line before @data");
    std::vector<std::string> fields = split_fields(s, ':');
    std::string label;
    if (labeled) {
      LOCKSTEP_REQUIRE(fields.size() >= 2,
                       where + ": a case needs its series and a class label, separated by ':'");
      label = fields.back();
      fields.pop_back();
    }
    const int64_t dims = static_cast<int64_t>(fields.size());
    if (t.cases == 0) {
      LOCKSTEP_REQUIRE(declared_dims == 0 || dims == declared_dims,
                       where + ": " + std::to_string(dims) + " dimension(s), @dimensions says " +
                           std::to_string(declared_dims));
      t.dims = dims;
    }
    LOCKSTEP_REQUIRE(dims == t.dims, where + ": " + std::to_string(dims) +
                                         " dimension(s), the first case has " +
                                         std::to_string(t.dims));
    int64_t case_length = 0;
    for (int64_t d = 0; d < dims; ++d) {
      const int64_t n = parse_series(fields[static_cast<size_t>(d)], where, d, &t.values);
      if (d == 0) {
        LOCKSTEP_REQUIRE(declared_length == 0 || n == declared_length,
                         where + ": series of length " + std::to_string(n) +
                             ", @seriesLength says " + std::to_string(declared_length));
        case_length = n;
      }
      LOCKSTEP_REQUIRE(n == case_length, where + ": dimension " + std::to_string(d) + " has length " +
                                             std::to_string(n) + ", dimension 0 has " +
                                             std::to_string(case_length) +
                                             ": the dimensions of one case must have equal length");
    }
    t.lengths.push_back(case_length);
    t.length = std::max(t.length, case_length);
    if (labeled) {
      const auto it = std::find(t.classes.begin(), t.classes.end(), label);
      LOCKSTEP_REQUIRE(it != t.classes.end(), where + ": class label '" + label.substr(0, 40) +
                                                  "' is not one @classLabel declares");
      t.labels.push_back(it - t.classes.begin());
    } else {
      t.labels.push_back(0);
    }
    ++t.cases;
  }
  LOCKSTEP_REQUIRE(!in.bad(), "cannot read " + path);
  LOCKSTEP_REQUIRE(in_data, path + ": no @data line");
  LOCKSTEP_REQUIRE(t.cases > 0, path + ": no cases after @data");
  if (!labeled) t.classes.clear();
  return t;
}

bool TsTable::equal_length() const {
  return std::all_of(lengths.begin(), lengths.end(), [&](int64_t n) { return n == length; });
}

std::vector<InputSplit> open_ts(const std::vector<std::pair<std::string, std::string>>& split_files,
                                std::vector<std::string>* class_names) {
  std::vector<TsTable> tables;
  for (const auto& [split_name, path] : split_files) {
    require_regular_file(path);
    std::ifstream in(path);
    LOCKSTEP_REQUIRE(in.good(), "cannot read .ts file " + path);
    tables.push_back(parse_ts(in, path));
  }
  const TsTable& first = tables[0];
  int64_t longest = 0;
  bool ragged = false;
  for (const TsTable& t : tables) {
    LOCKSTEP_REQUIRE(t.dims == first.dims, t.path + ": cases of " + std::to_string(t.dims) + " dimension(s), " +
                                               first.path + " has " + std::to_string(first.dims));
    LOCKSTEP_REQUIRE(t.classes == first.classes,
                     t.path + ": declares other class labels (@classLabel) than " + first.path);
    longest = std::max(longest, t.length);
    ragged = ragged || !t.equal_length() || t.length != first.length;
  }
  *class_names = first.classes;
  std::vector<InputSplit> out;
  for (size_t i = 0; i < tables.size(); ++i) {
    TsTable& t = tables[i];
    DatasetSpec spec;
    spec.dtype = DType::kFloat32;
    spec.sample_shape = {t.dims, longest};
    spec.num_classes = static_cast<int64_t>(t.classes.size());
    spec.labeled = !t.classes.empty();
    spec.ragged = ragged;
    // Each case's [dims, its length] rows, zero-padded to the longest case.
    std::vector<float> padded(static_cast<size_t>(t.cases * t.dims * longest), 0.0f);
    size_t at = 0;
    for (int64_t c = 0; c < t.cases; ++c) {
      const int64_t n = t.lengths[static_cast<size_t>(c)];
      for (int64_t d = 0; d < t.dims; ++d, at += static_cast<size_t>(n))
        std::copy(t.values.begin() + static_cast<std::ptrdiff_t>(at),
                  t.values.begin() + static_cast<std::ptrdiff_t>(at + static_cast<size_t>(n)),
                  padded.begin() + (c * t.dims + d) * longest);
    }
    std::vector<unsigned char> bytes(padded.size() * sizeof(float));
    std::memcpy(bytes.data(), padded.data(), bytes.size());
    std::vector<int64_t> extras = ragged ? t.lengths : std::vector<int64_t>{};
    out.push_back({split_files[i].first,
                   std::make_unique<MemorySource>(t.path, spec, std::move(bytes), std::move(t.labels),
                                                  std::vector<int64_t>{}, std::move(extras)),
                   i == 0});
  }
  return out;
}

}  // namespace lockstep::io
