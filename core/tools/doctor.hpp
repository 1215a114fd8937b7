// doctor: `lockstep doctor`, run under the same launcher and allocation as the long job it
// precedes. Every check runs on every rank; each problem is printed by the rank that saw
// it, and rank 0 ends with one verdict. Collective.
//
// 1. who is where: rank, host, node-local rank, GPUs visible, CPU cores in the affinity
//    mask, threads (a table on rank 0);
// 2. MPI: an all-reduce of known values gives the known sum; a barrier completes;
// 3. NCCL (when compiled in): rank 0's unique ID reaches every rank intact (a fingerprint
//    all-reduce); where every rank has a GPU, a communicator is built and all-reduces;
// 4. data (with --data.path): the manifest reads; every shard is opened by one rank
//    (round robin) and its first batch is read and validated;
// 5. an all-reduce of 4 KiB and of --doctor.allreduce-mb through lockstep's communicator,
//    timed (max over ranks): latency and bus bandwidth, also written to --doctor.out as
//    JSON for `lockstep report`'s all-reduce model.
// Returns 0 when every check passed, 1 otherwise.
#pragma once

#include "core/config/config.hpp"

namespace lockstep {

class MpiRuntime;

int run_doctor(const Config& cfg, const MpiRuntime& mpi);

}  // namespace lockstep
