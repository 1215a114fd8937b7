// predict_command: `lockstep predict` — distributed batch inference over any split,
// labelled or not, written in sample order (io/records/predictions: .csv or .h5).
//
// Every rank predicts its own share (the same assignment as training: io/loader/
// shard_plan); then, walking the split's sample ranges in order, the rank that holds each
// range sends its rows to rank 0, which appends them to the file. Rank 0 holds one range
// at a time, never the whole split; the file appears only when complete. A row's index is
// the sample's position in the split (shards in manifest order). Returns the exit code.
#pragma once

#include "core/config/config.hpp"

namespace lockstep {

class MpiRuntime;

int run_prediction(const Config& cfg, const MpiRuntime& mpi);

}  // namespace lockstep
