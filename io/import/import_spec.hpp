// import_spec: what `lockstep shard` is told, turned into the importer's inputs.
//
// INPUT (and TEST_INPUT) is KIND:PATH: idx:DIR (MNIST-family IDX; t10k-* becomes 'test'),
// csv:FILE, ts:FILE (UEA/UCR .ts), audio:MANIFEST (speech), video:LABELS.csv (clips of
// per-frame labelled video) or hdf5:FILE (the 'train' split; --test-input the 'test'
// one), ucihar:DIR (the UCI-HAR layout, train/ and test/). open_import
// opens every source, fills OPTIONS (class names, the files it reads) and describes the
// inputs and every option as the fingerprint that lets a second identical run skip the
// work (importer.hpp).
#pragma once

#include <string>
#include <vector>

#include "io/import/csv_import.hpp"
#include "io/import/importer.hpp"
#include "io/import/video_import.hpp"

namespace lockstep::io {

struct ImportSpec {
  std::string input, test_input;  // KIND:PATH
  std::string class_names;        // comma-separated; empty: from the input
  std::string samples_dataset = "samples", labels_dataset = "labels";  // hdf5
  std::string har_signals = "inertial";                                // ucihar: inertial | features
  CsvOptions csv;  // its group_column also names video's trial column
  VideoOptions video;
  ImportOptions options;
};

struct OpenedImport {
  std::vector<InputSplit> inputs;
  std::string fingerprint;
};

// Throws UsageError for a malformed KIND:PATH, mismatched kinds or any option value out of
// its choices or range (checked first, whatever the kind), Error for unreadable inputs
// (naming the file).
OpenedImport open_import(ImportSpec& spec);

// Parses --frame-size "HxW" (e.g. 112x112) into OPT; throws UsageError naming --frame-size.
// (Here, not in video_import: a build without video support still parses its options.)
void parse_frame_size(const std::string& text, VideoOptions* opt);

}  // namespace lockstep::io
