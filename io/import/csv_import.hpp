// csv_import: the CSV input of `lockstep shard --input csv:FILE [--test-input csv:FILE]`.
//
// Numeric feature columns plus one label column (by name or 0-based index; default: the
// last column; "none": unlabeled data, every column a feature). The header is detected (a first line with a non-numeric field) or forced.
// Plain delimiter-separated fields, no quoting; delimiter ' ' means runs of spaces/tabs.
// A ';' ends a record (WISDM-style "33,Jogging,4910...,-0.69,12.68,0.50;" lines, several
// records on a line allowed) unless ';' is the delimiter. --ignore-columns drops columns
// (a timestamp) from the features. Labels that are all non-negative integers
// are class ids; otherwise each distinct label text is a class, numbered in sorted order
// across all files, and the texts become the class names.
//
// Several files (--test-input): with headers, each file's feature columns are matched to
// the first file's by name, in any order (a missing, extra or repeated name, or a header in
// only one file, is refused); without headers, by position.
//
// --group-column NAME|INDEX: a column of group ids (subject, trial; any text), not a
// feature: the validation split then takes whole groups (import_plan.hpp), so no subject
// is in two splits.
//
// Without --window each row is a float32 sample [F]. With --window W (and --stride S,
// default W) the file is a time series: rows i..i+W-1 form a sample [F, W] (features as
// channels, time last). Windows never straddle a group boundary, and by default
// (--window-labels pure) never a label boundary either: the rows are cut into runs of
// equal (group, label) and windows start at each run's first row, every S rows, while
// they fit (a run shorter than W gives none). --window-labels majority lets windows cross
// label boundaries (within a group), labelled with their most frequent label (ties: the
// smallest class id).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "io/import/importer.hpp"

namespace lockstep::io {

struct CsvOptions {
  std::string label_column;     // name or index; empty: last column
  std::string header = "auto";  // auto | yes | no
  int64_t window = 0;
  int64_t stride = 0;  // 0: = window
  std::string window_labels = "pure";  // pure | majority
  std::string group_column;            // name or index; empty: no groups
  std::string ignore_columns;          // comma-separated names or indices
  char delimiter = ',';
};

// SPLIT_FILES: (split, path) pairs, the first one gets --val-fraction.
std::vector<InputSplit> open_csv(const std::vector<std::pair<std::string, std::string>>& split_files,
                                 const CsvOptions& opt, std::vector<std::string>* class_names);

}  // namespace lockstep::io
