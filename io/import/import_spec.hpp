// import_spec: what `lockstep shard` is told, turned into the importer's inputs.
//
// INPUT (and TEST_INPUT) is KIND:PATH: idx:DIR (MNIST-family IDX; t10k-* becomes 'test'),
// csv:FILE, ts:FILE (UEA/UCR .ts), audio:MANIFEST (speech), video:LABELS.csv (clips of
// per-frame labelled video) or hdf5:FILE (the 'train' split; --test-input the 'test'
// one), ucihar:DIR (the UCI-HAR layout, train/ and test/), npy:X.npy[,Y.npy] or
// npz:FILE[:X,Y] (NumPy arrays, npy_import.hpp), images:DIR (class folders of JPEG/PNG,
// image_import.hpp). open_import
// opens every source, fills OPTIONS (class names, the files it reads) and describes the
// inputs and every option as the fingerprint that lets a second identical run skip the
// work (importer.hpp).
#pragma once

#include <string>
#include <vector>

#include "io/import/csv_import.hpp"
#include "io/import/image_import.hpp"
#include "io/import/importer.hpp"
#include "io/import/video_import.hpp"

namespace lockstep::io {

struct ImportSpec {
  std::string input, test_input;  // KIND:PATH
  std::string class_names;        // comma-separated; empty: from the input
  std::string samples_dataset = "samples", labels_dataset = "labels";  // hdf5
  std::string har_signals = "inertial";                                // ucihar: inertial | features
  std::string sample_shape;  // "1,28,28": every sample reshaped (same elements); empty: as stored
  // npy/npz/hdf5, after any --sample-shape: channels-last (samples [..,C] stored as [C,..]) |
  // channels-first (as stored) | empty: as stored, refused when the shape looks channels-last
  std::string layout;
  // --no-labels: data to run `predict` on (video, audio, librispeech; csv as --label-column
  // none): no label column, frame or transcript needed; stored in source order (no shuffle,
  // no validation split): prediction row i is the input's i-th sample (video: the i-th
  // clip of video_import.hpp's order).
  bool no_labels = false;
  bool val_fraction_given = false;  // --val-fraction on the command line (unlabelled input refuses it)
  CsvOptions csv;  // its group_column also names video's trial column
  VideoOptions video;
  ImageOptions images;
  ImportOptions options;
};

struct OpenedImport {
  std::vector<InputSplit> inputs;
  std::string fingerprint;
  // The same in the form lockstep wrote before 2026-11-29 (size and whole-second mtime): a
  // dataset it marks is up to date too, not imported again after an upgrade.
  std::string legacy_fingerprint;
};

// Throws UsageError for a malformed KIND:PATH, mismatched kinds or any option value out of
// its choices or range (checked first, whatever the kind), Error for unreadable inputs
// (naming the file).
OpenedImport open_import(ImportSpec& spec);

// Parses --frame-size "HxW" (e.g. 112x112) into OPT; throws UsageError naming --frame-size.
// (Here, not in video_import: a build without video support still parses its options.)
void parse_frame_size(const std::string& text, VideoOptions* opt);
// Parses --image-size "HxW" (e.g. 224x224) into OPT; throws UsageError naming --image-size.
void parse_image_size(const std::string& text, ImageOptions* opt);

}  // namespace lockstep::io
