// stop_protocol: how a signalled training run stops, wherever the signal finds it
// (core/dist/stop_signal sets the flag; the Slurm templates requeue on RUN_DIR/resumable).
// Collective, every rank, at the same points:
// 1. the trainer's SignalVote (core/dist/signal_vote.hpp): every rank learns at the same
//    step whether any rank was signalled — a vote posted at one step boundary and read at
//    the next, no barrier per step — and, blocking, after the last step's validation;
// 2. the caller saves the stop's checkpoint (or names one already saved at this step);
// 3. exit_resumable(): rank 0 waits until that checkpoint is durable and writes
//    RUN_DIR/resumable; no rank leaves before (a barrier); a further signal now exits 3
//    at once; every rank returns kExitResumable (3).
// A run is complete only once its end row is written (metrics_log.hpp): a stop after the
// last step leaves the final evaluation to the resumed job.
#pragma once

#include <cstdint>

namespace lockstep {

class MpiRuntime;
class Recorder;

int exit_resumable(const MpiRuntime& mpi, Recorder& rec, int64_t step);

}  // namespace lockstep
