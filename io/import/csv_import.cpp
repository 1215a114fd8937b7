// csv_import: see csv_import.hpp.
#include "io/import/csv_import.hpp"
#include "io/util/file_util.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/base/error.hpp"
#include "io/import/text_fields.hpp"

namespace lockstep::io {
namespace {

struct CsvTable {
  std::string path;
  std::vector<std::string> columns;  // names, or "column N"
  bool header = false;
  std::vector<std::string> feature_names;  // the feature columns' names, in file order
  int64_t rows = 0;
  int64_t features = 0;
  std::vector<float> values;        // rows x features
  std::vector<std::string> labels;  // raw label text per row
  std::vector<std::string> groups;  // raw group text per row (--group-column)
};

bool is_class_id(const std::string& s) {
  return !s.empty() && s.size() < 10 && s.find_first_not_of("0123456789") == std::string::npos;
}

CsvTable parse_csv(const std::string& path, const CsvOptions& opt) {
  require_regular_file(path);
  std::ifstream in(path);
  LOCKSTEP_REQUIRE(in.good(), "cannot read CSV file " + path);
  CsvTable t;
  t.path = path;
  std::string line;
  int64_t lineno = 0, label_col = -1, group_col = -1, width = -1;
  std::set<int64_t> ignored;
  // The file's records in order, each with its line number: a line holds one, or several
  // separated by ';' (one line per file of some exports). Blank ones are skipped; Excel's
  // "CSV UTF-8" byte-order mark before the first is dropped.
  std::deque<std::pair<int64_t, std::string>> pending;
  const auto next = [&](std::pair<int64_t, std::string>* out) {
    while (pending.empty()) {
      if (!std::getline(in, line)) return false;
      if (++lineno == 1 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);
      // (Not in a line with quotes: a quoted field may hold a ';'.)
      const bool several = opt.delimiter != ';' && line.find(';') != std::string::npos &&
                           line.find('"') == std::string::npos;
      for (std::string& r : several ? split_fields(line, ';') : std::vector<std::string>{line})
        if (r.find_first_not_of(" \t\r") != std::string::npos) pending.emplace_back(lineno, std::move(r));
    }
    *out = std::move(pending.front());
    pending.pop_front();
    return true;
  };
  std::pair<int64_t, std::string> record;
  bool first = true;
  while (next(&record)) {
    lineno = record.first;
    const auto fields = split_quoted_fields(record.second, opt.delimiter, path, record.first);
    if (first) {
      first = false;
      width = static_cast<int64_t>(fields.size());
      // auto: the first record is a header when one of its fields is not a number where the
      // next record's is (a header over numbers). Text labels in every row ("1,2,cat") do
      // not make the first row a header: it was dropped, silently (a hostile finding).
      // Text only in columns that hold text below too ("0,1,2,label" over "5,3,4,cat", or
      // "1,2,cat" over "3,4,dog") cannot be told apart: refused, asking which.
      bool header = opt.header == "yes";
      if (opt.header == "auto") {
        std::pair<int64_t, std::string> second;
        if (next(&second)) {
          const auto below = split_quoted_fields(second.second, opt.delimiter, path, second.first);
          float v;
          bool text = false;
          for (size_t i = 0; i < fields.size(); ++i) {
            const bool word = !parse_float(fields[i], &v);
            text = text || word;
            header = header || (word && i < below.size() && parse_float(below[i], &v));
          }
          if (text && !header)
            throw UsageError(path + ":" + std::to_string(record.first) + ": cannot tell whether this first line is a "
                             "header: its text is in columns that hold text below it too; pass --header yes or "
                             "--header no");
          pending.push_front(std::move(second));
          lineno = record.first;  // the look-ahead read on: messages about this record name its line
        } else {  // one record: a header when it holds a field that is not a number
          header = std::any_of(fields.begin(), fields.end(), [](const std::string& f) {
            float v;
            return !parse_float(f, &v);
          });
        }
      }
      for (int64_t i = 0; i < width; ++i)
        t.columns.push_back(header ? fields[static_cast<size_t>(i)]
                                   : "column " + std::to_string(i));
      // A column given by name (needs the header) or 0-based index.
      const auto column = [&](const std::string& spec, const char* what) -> int64_t {
        int64_t c = -1;
        if (is_class_id(spec)) {
          c = std::stoll(spec);
        } else {
          const auto it = std::find(t.columns.begin(), t.columns.end(), spec);
          LOCKSTEP_REQUIRE(header && it != t.columns.end(),
                           path + ": no column named '" + spec + "'" +
                               (header ? "" : " (the file has no header)"));
          c = it - t.columns.begin();
        }
        LOCKSTEP_REQUIRE(c >= 0 && c < width, path + ": " + what + " column " + spec +
                                                  " is outside its " + std::to_string(width) +
                                                  " columns");
        return c;
      };
      if (opt.label_column == "none") {
        label_col = -1;  // unlabeled: every column is a feature
      } else if (opt.label_column.empty()) {
        label_col = width - 1;
      } else {
        label_col = column(opt.label_column, "label");
      }
      if (!opt.group_column.empty()) {
        group_col = column(opt.group_column, "group");
        LOCKSTEP_REQUIRE(group_col != label_col,
                         path + ": --group-column and the label column are the same column");
      }
      std::stringstream list(opt.ignore_columns);
      for (std::string item; std::getline(list, item, ',');) {
        const int64_t c = column(item, "ignored");
        LOCKSTEP_REQUIRE(
            c != label_col && c != group_col,
            path + ": --ignore-columns names the label or group column (" + item + ")");
        ignored.insert(c);
      }
      t.features = width - (label_col < 0 ? 0 : 1) - (group_col < 0 ? 0 : 1) -
                   static_cast<int64_t>(ignored.size());
      LOCKSTEP_REQUIRE(t.features >= 1, path + ": needs at least one feature column");
      t.header = header;
      for (int64_t i = 0; i < width; ++i)
        if (i != label_col && i != group_col && !ignored.count(i)) t.feature_names.push_back(t.columns[static_cast<size_t>(i)]);
      if (header) continue;
    }
    LOCKSTEP_REQUIRE(static_cast<int64_t>(fields.size()) == width,
                     path + ":" + std::to_string(lineno) + ": " + std::to_string(fields.size()) +
                         " fields, expected " + std::to_string(width));
    for (int64_t i = 0; i < width; ++i) {
      const std::string& f = fields[static_cast<size_t>(i)];
      if (i == label_col) {
        LOCKSTEP_REQUIRE(!f.empty(), path + ":" + std::to_string(lineno) + ": empty label");
        t.labels.push_back(f);
        continue;
      }
      if (i == group_col) {
        LOCKSTEP_REQUIRE(!f.empty(), path + ":" + std::to_string(lineno) + ": empty group id");
        t.groups.push_back(f);
        continue;
      }
      if (ignored.count(i)) continue;
      float v = 0;
      LOCKSTEP_REQUIRE(parse_float(f, &v) && std::isfinite(v),
                       path + ":" + std::to_string(lineno) + ": column '" +
                           t.columns[static_cast<size_t>(i)] + "' value '" + f +
                           "' is not a finite number");
      t.values.push_back(v);
    }
    ++t.rows;
  }
  LOCKSTEP_REQUIRE(t.rows > 0, path + ": no data rows");
  return t;
}

// Issue 31 (4): a test file's feature columns in another order than the training file's
// were read by position, silently permuting every feature. Files with headers are matched
// by column name (reordered to the first file's order); a missing, extra or repeated name,
// or one file with a header and one without, is refused naming both files.
void match_columns(const CsvTable& first, CsvTable* t) {
  if (!first.header && !t->header) return;  // no names: by position, as --header no says
  LOCKSTEP_REQUIRE(first.header && t->header,
                   (first.header ? t->path : first.path) + " has no header but " +
                       (first.header ? first.path : t->path) +
                       " has one: their feature columns cannot be matched by name (give both files a header, "
                       "or pass --header no to read both by position)");
  if (t->feature_names == first.feature_names) return;
  std::map<std::string, int64_t> at;
  for (size_t i = 0; i < t->feature_names.size(); ++i)
    LOCKSTEP_REQUIRE(at.emplace(t->feature_names[i], static_cast<int64_t>(i)).second,
                     t->path + ": feature column '" + t->feature_names[i] + "' appears twice");
  std::vector<int64_t> from;
  for (const std::string& name : first.feature_names) {
    const auto it = at.find(name);
    LOCKSTEP_REQUIRE(it != at.end(), t->path + ": no feature column '" + name + "', which " + first.path + " has");
    from.push_back(it->second);
    at.erase(it);
  }
  LOCKSTEP_REQUIRE(at.empty(), t->path + ": feature column '" + (at.empty() ? "" : at.begin()->first) +
                                   "' is not in " + first.path);
  const int64_t f = t->features;
  std::vector<float> reordered(t->values.size());
  for (int64_t r = 0; r < t->rows; ++r)
    for (int64_t j = 0; j < f; ++j)
      reordered[static_cast<size_t>(r * f + j)] = t->values[static_cast<size_t>(r * f + from[static_cast<size_t>(j)])];
  t->values = std::move(reordered);
  t->feature_names = first.feature_names;
}

std::unique_ptr<SampleSource> to_source(const CsvTable& t, const std::vector<int64_t>& ids,
                                        const std::vector<int64_t>& group_ids, int64_t classes,
                                        const CsvOptions& opt) {
  DatasetSpec spec;
  spec.dtype = DType::kFloat32;
  spec.num_classes = classes;
  spec.labeled = opt.label_column != "none";
  std::vector<float> samples;
  std::vector<int64_t> labels, groups;
  const int64_t f = t.features;
  if (opt.window <= 0) {
    spec.sample_shape = {f};
    samples = t.values;
    labels = ids;
    groups = group_ids;
  } else {
    const int64_t w = opt.window, s = opt.stride > 0 ? opt.stride : opt.window;
    const bool pure = opt.window_labels == "pure" && spec.labeled;
    spec.sample_shape = {f, w};
    std::vector<int64_t> counts(static_cast<size_t>(std::max<int64_t>(1, classes)));
    const auto group_of = [&](int64_t row) {
      return group_ids.empty() ? 0 : group_ids[static_cast<size_t>(row)];
    };
    // Runs of rows a window may span: equal group (and, when pure, equal label).
    for (int64_t begin = 0, end = 0; begin < t.rows; begin = end) {
      end = begin + 1;
      while (end < t.rows && group_of(end) == group_of(begin) &&
             (!pure || ids[static_cast<size_t>(end)] == ids[static_cast<size_t>(begin)]))
        ++end;
      for (int64_t start = begin; start + w <= end; start += s) {
        for (int64_t c = 0; c < f; ++c)
          for (int64_t k = 0; k < w; ++k)
            samples.push_back(t.values[static_cast<size_t>((start + k) * f + c)]);
        if (!group_ids.empty()) groups.push_back(group_of(start));
        if (!spec.labeled) {
          labels.push_back(0);
          continue;
        }
        std::fill(counts.begin(), counts.end(), 0);
        for (int64_t k = 0; k < w; ++k)
          ++counts[static_cast<size_t>(ids[static_cast<size_t>(start + k)])];
        labels.push_back(std::max_element(counts.begin(), counts.end()) - counts.begin());
      }
    }
    LOCKSTEP_REQUIRE(
        !labels.empty(),
        t.path + ": no window of " + std::to_string(w) + " rows fits in any run of rows of one " +
            (pure ? "group and label" : "group") + " (" + std::to_string(t.rows) + " rows)" +
            (pure ? "; --window-labels majority lets windows cross label boundaries" : ""));
  }
  std::vector<unsigned char> bytes(samples.size() * sizeof(float));
  std::memcpy(bytes.data(), samples.data(), bytes.size());
  return std::make_unique<MemorySource>(t.path, spec, std::move(bytes), std::move(labels),
                                        std::move(groups));
}

}  // namespace

std::vector<InputSplit> open_csv(
    const std::vector<std::pair<std::string, std::string>>& split_files, const CsvOptions& opt,
    std::vector<std::string>* class_names) {
  std::vector<CsvTable> tables;
  for (const auto& [split, path] : split_files) tables.push_back(parse_csv(path, opt));
  for (auto& t : tables) {
    LOCKSTEP_REQUIRE(t.features == tables[0].features,
                     t.path + ": " + std::to_string(t.features) + " feature columns, " +
                         tables[0].path + " has " + std::to_string(tables[0].features));
    match_columns(tables[0], &t);
  }
  // Class ids 0..K-1 when every label is a whole number >= 0 ("2", "2.0" and "2e0" alike:
  // "2.0" was a class name, sorted as text, so 10.0 came before 2.0), else class names.
  // Whole numbers below 0 (-1/+1 data) are names, numbered in numeric order; a number with a
  // fraction is refused: a class is not a measurement.
  std::set<std::string> texts;
  for (const auto& t : tables) texts.insert(t.labels.begin(), t.labels.end());
  std::map<std::string, double> value_of;  // every label, when each is a finite number
  for (const auto& l : texts) {
    char* end = nullptr;
    const double v = std::strtod(l.c_str(), &end);
    if (end != l.c_str() + l.size() || !std::isfinite(v)) {
      value_of.clear();
      break;
    }
    value_of[l] = v;
  }
  const bool whole = value_of.size() == texts.size();  // every label a number (none: unlabeled)
  bool numeric = whole;
  for (const auto& [l, v] : value_of) {
    if (v != std::floor(v)) {
      size_t t = 0;  // the file that holds it
      while (t + 1 < tables.size() && std::find(tables[t].labels.begin(), tables[t].labels.end(), l) == tables[t].labels.end()) ++t;
      throw Error(tables[t].path + ": label '" + l + "' is a number with a fraction: class labels are whole "
                  "numbers 0..K-1 or names (lockstep classifies; a measurement is not a class)");
    }
    numeric = numeric && v >= 0;
  }
  std::map<std::string, int64_t> id_of;  // each label text's class
  int64_t classes = 0;
  if (numeric) {
    for (const auto& [l, v] : value_of) {
      LOCKSTEP_REQUIRE(v < static_cast<double>(kMaxClasses),
                       split_files[0].second + ": class id " + l + " is not below " +
                           std::to_string(kMaxClasses) + " (class ids count 0..K-1)");
      id_of[l] = static_cast<int64_t>(v);
      classes = std::max<int64_t>(classes, id_of[l] + 1);
    }
  } else if (whole) {  // names in numeric order, one per number ("1" and "1.0" are one class)
    std::map<double, std::vector<std::string>> by_value;
    for (const auto& [l, v] : value_of) by_value[v].push_back(l);
    for (const auto& [v, spellings] : by_value) {
      for (const auto& l : spellings) id_of[l] = classes;
      class_names->push_back(fmt::format("{:.0f}", v));
      ++classes;
    }
  } else {
    for (const auto& l : texts) {
      id_of[l] = classes++;
      class_names->push_back(l);
    }
  }
  std::map<std::string, int64_t> group_id;  // group texts numbered across all files
  std::vector<InputSplit> out;
  for (size_t i = 0; i < tables.size(); ++i) {
    std::vector<int64_t> ids, groups;
    for (const auto& l : tables[i].labels) ids.push_back(id_of.at(l));
    if (opt.label_column == "none") ids.assign(static_cast<size_t>(tables[i].rows), 0);
    for (const auto& g : tables[i].groups)
      groups.push_back(group_id.emplace(g, static_cast<int64_t>(group_id.size())).first->second);
    out.push_back({split_files[i].first, to_source(tables[i], ids, groups, classes, opt), i == 0});
  }
  return out;
}

}  // namespace lockstep::io
