// run_build: the start of a training run, in order (every rank; collectives in the same
// order everywhere):
// 1. read the manifest, compute steps per epoch (shard_plan), open this rank's readers;
// 2. build the model with seed-identical weights, check that every rank has the same
//    config, model, data and versions (preflight), place it (device, communicator);
// 3. broadcast parameters and buffers from rank 0 anyway (a rank with other defaults
//    must not drift silently); optimizer, reducer, loss, LR schedule (with the world-size
//    scaling rule), AMP;
// 4. resume: rank 0 picks the checkpoint (--resume auto|none|PATH) and broadcasts its
//    path; every rank loads it;
// 5. rank 0 opens the run dir and prints what the run is: ranks, hosts, device, data,
//    model, batch arithmetic and effective learning rate.
#pragma once

#include "core/run_state.hpp"

namespace lockstep {

void build_run(Run& r);

}  // namespace lockstep
