// hdf5_import: the HDF5 input of `lockstep shard --input hdf5:FILE` — the common HPC case
// of one big file re-sharded into N. Streams: labels are read whole (8 bytes a sample),
// samples in sequential hyperslabs, never the whole file.
//
// Samples: dataset --samples-dataset (default "samples"), N x shape; unsigned 8-bit and
// signed 16-bit integers are kept, any float type becomes float32. Labels: dataset
// --labels-dataset (default "labels"), N integers of any width; "none" imports unlabeled
// data (no /labels in the shards).
#pragma once

#include <memory>
#include <string>

#include "io/import/sample_source.hpp"

namespace lockstep::io {

std::unique_ptr<SampleSource> open_hdf5_source(const std::string& path, const std::string& samples_dataset,
                                               const std::string& labels_dataset);

}  // namespace lockstep::io
