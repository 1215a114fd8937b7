// csv_import: the CSV input of `lockstep shard --input csv:FILE [--test-input csv:FILE]`.
//
// Numeric feature columns plus one label column (by name or 0-based index; default: the
// last column; "none": unlabeled data, every column a feature). The header is detected (a first line with a non-numeric field) or forced.
// Plain delimiter-separated fields, no quoting. Labels that are all non-negative integers
// are class ids; otherwise each distinct label text is a class, numbered in sorted order
// across all files, and the texts become the class names.
//
// Without --window each row is a float32 sample [F]. With --window W (and --stride S,
// default W) the file is one time series: rows i..i+W-1 (i = 0, S, 2S, ...) form a sample
// [F, W] (features as channels, time last), labelled with the most frequent label in the
// window (ties: the smallest class id).
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
  char delimiter = ',';
};

// SPLIT_FILES: (split, path) pairs, the first one gets --val-fraction.
std::vector<InputSplit> open_csv(const std::vector<std::pair<std::string, std::string>>& split_files,
                                 const CsvOptions& opt, std::vector<std::string>* class_names);

}  // namespace lockstep::io
