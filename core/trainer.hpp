// trainer: `lockstep train` and `lockstep evaluate`.
//
// Training protocol (every rank; collectives in the same order everywhere):
// 1. read the manifest, compute steps per epoch (shard_plan), load this rank's samples;
// 2. build the model with seed-identical weights, then broadcast parameters and buffers
//    from rank 0 anyway (a rank with other defaults must not drift silently);
// 3. resume: rank 0 picks the checkpoint (--resume auto|none|PATH) and broadcasts its path;
//    every rank loads it;
// 4. each step: forward, backward, average gradients (GradReducer), optimizer step;
//    every --log-every steps one all-reduce of the loss window, logged by rank 0;
// 5. at epoch end (and when --max-steps stops the run) distributed validation, a metrics
//    row and a checkpoint, written by rank 0 alone.
// Returns the process exit code.
#pragma once

#include "core/config.hpp"

namespace lockstep {

class MpiRuntime;

int run_training(const Config& cfg, const MpiRuntime& mpi);
int run_evaluation(const Config& cfg, const MpiRuntime& mpi);

}  // namespace lockstep
