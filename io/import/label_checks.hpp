// label_checks: the labels an import may write, checked over all its inputs before anything is
// written: every label a class id of the dataset, and every class a later input (the test or
// val input) holds one the first (training) input holds too — else it is a class nothing
// trains on, every sample of it scored wrong (a hostile finding, 2026-11-29: npy, npz, hdf5
// and idx imported one; csv refused it).
#pragma once

#include <vector>

#include "io/dataset/shard_format.hpp"
#include "io/import/importer.hpp"

namespace lockstep::io {

// Throws Error naming the input, the sample or class and how many samples it has. Unlabelled
// inputs and sequence targets (CTC) pass.
void check_labels(const std::vector<InputSplit>& inputs, const DatasetSpec& spec);

}  // namespace lockstep::io
