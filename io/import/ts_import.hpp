// ts_import: the UEA/UCR time-series classification format, `lockstep shard --input ts:FILE
// [--test-input ts:FILE]` (e.g. BasicMotions_TRAIN.ts / _TEST.ts).
//
// A .ts file is '#' (or ARFF-style '%') comment lines, '@key value' header lines (@problemName, @timeStamps,
// @missing, @univariate, @dimensions, @equalLength, @seriesLength, @classLabel true L1 L2
// ...), then '@data' and one case per line: the dimensions separated by ':', each a
// comma-separated series, then the class label. Each case becomes a float32 sample [D, L]
// (dimensions as channels, time last: what cnn1d takes); classes are numbered in the order
// @classLabel declares them, which become the class names.
//
// Unequal-length cases (JapaneseVowels, SpokenArabicDigits, ...) become ragged samples
// (shard format v2): [D, L] padded with zeros to the longest case of all the files, each
// case's own length stored; models that take them (cnn1d, lmu) see only the valid steps.
// Refused, each with a line naming the file and line: the dimensions of one case with
// different lengths, missing values ('?'), timestamped series, a case with another
// dimension count, a label not declared, a file without @data or cases, and test files
// declaring other classes or dimension counts.
#pragma once

#include <istream>
#include <string>
#include <utility>
#include <vector>

#include "io/import/importer.hpp"

namespace lockstep::io {

struct TsTable {
  std::string path;
  std::vector<std::string> classes;  // as @classLabel declares them; empty: unlabeled
  int64_t dims = 0, length = 0, cases = 0;  // LENGTH: the longest case's
  std::vector<float> values;        // per case dims x its length, concatenated
  std::vector<int64_t> lengths;     // per case
  bool equal_length() const;
  std::vector<int64_t> labels;      // class ids, or zeros when unlabeled
};

// Parses one .ts file from IN; PATH names it in messages. Throws lockstep::Error.
TsTable parse_ts(std::istream& in, const std::string& path);

// SPLIT_FILES: (split, path) pairs, the first one gets --val-fraction.
std::vector<InputSplit> open_ts(const std::vector<std::pair<std::string, std::string>>& split_files,
                                std::vector<std::string>* class_names);

}  // namespace lockstep::io
