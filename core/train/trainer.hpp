// trainer: `lockstep train` — the epoch loop and the step.
//
// A training run (every rank; collectives in the same order everywhere):
// 1. Session builds the parts in order (session.hpp); open_recorder takes the run
//    directory (rank 0); the checkpointer agrees which checkpoint to resume and every
//    rank loads it; the recorder opens the run's files at that step.
// 2. Each step: data, forward, backward, gradient all-reduce (GradReducer), optimizer;
//    the phases timed where they run (step_timer.hpp). Every --log-every steps one
//    all-reduce of the log window gives the train row (epoch_stats.hpp).
// 3. At every step boundary each rank posts whether it was signalled and reads the vote
//    posted a step earlier (signal_vote.hpp, no barrier per step): on a signal a checkpoint
//    is made durable, every rank waits for it, and all exit 3 (resumable).
// 4. At each epoch end (and when --max-steps stops the run): validation on the val
//    split, the epoch row, best.ckpt, a checkpoint.
// 5. At the end: the test split evaluated once with the best checkpoint's weights (the
//    last weights when there is no validation), its row and line, the end row. A run is
//    complete only once that end row is written: a signal after the last step exits 3
//    keeping the last checkpoint (stop_protocol.hpp), and a job that resumes a run whose
//    training is done but has no end row (stopped or killed in its final evaluation)
//    validates the final weights again and runs the test now.
// The run's state between steps is TrainState's (train_state.hpp); rows and log lines
// come from run_rows.hpp.
// Returns the process exit code.
#pragma once

#include "core/config/config.hpp"

namespace lockstep {

class MpiRuntime;

int run_training(const Config& cfg, const MpiRuntime& mpi);

}  // namespace lockstep
