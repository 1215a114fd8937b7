// npy_import: NumPy arrays as the input of `lockstep shard`.
//
//   npy:SAMPLES.npy[,LABELS.npy]          two .npy files (np.save), or one: unlabelled
//   npz:FILE.npz[:SAMPLES_KEY[,LABELS_KEY]]  arrays of one np.savez / np.savez_compressed
//                                          archive; keys default to --samples-dataset and
//                                          --labels-dataset ("samples", "labels"); a labels
//                                          key of "none", or none given after SAMPLES_KEY:
//                                          unlabelled
// e.g. Keras' mnist.npz: --input npz:mnist.npz:x_train,y_train --test-input npz:mnist.npz:x_test,y_test
//
// Samples: axis 0 counts them, the other axes are one sample's shape (a 1-d array: one value
// each); stored as npy_format's npy_store_dtype (uint8 and int16 kept, float16 kept, wider
// integers and float64 as float32), any byte order. Labels: one integer per sample ([N] or
// [N, 1]), 0 <= label < 2^31, else refused naming the file and the first bad index.
// C-order arrays stream in one pass in file order (an .npz member through libzip, which
// checks the member's CRC-32 as its last bytes are read); a Fortran-order array is read
// whole and reordered in memory.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/import/importer.hpp"

namespace lockstep::io {

struct NpyKeys {
  std::string samples = "samples", labels = "labels";  // npz member names without ".npy"
};

// Opens the splits (split name, PATH after "npy:"/"npz:") as sources; FILES receives the
// files read. Throws UsageError for a malformed PATH, Error naming the file otherwise.
std::vector<InputSplit> open_npy(const std::vector<std::pair<std::string, std::string>>& split_paths, bool npz,
                                 const NpyKeys& default_keys, std::vector<std::string>* files);

}  // namespace lockstep::io
