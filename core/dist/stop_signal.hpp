// stop_signal: SIGTERM / SIGUSR1 (Slurm's time limit and --signal=USR1@T) stop a run
// cleanly; SIGUSR2 asks every rank for its flight record (mpi_runtime.hpp) and nothing
// else.
//
// 1. install() sets handlers; the first signal only sets a flag (async-signal-safe);
// 2. all ranks agree on the flag (signal_vote.hpp: a non-blocking vote, max over ranks,
//    posted at one step boundary and read at the next), so a signal that reached one rank
//    stops all of them, at the same step;
// 3. the trainer then writes a checkpoint (rank 0), waits until it is durable, and only
//    then (after a collective, so no rank leaves before the checkpoint is on disk) calls
//    mark_durable() and exits with kExitResumable (3): `--resume auto` continues there;
// 4. a second signal exits the process at once: with 3 once the checkpoint is durable
//    (a launcher that SIGTERMs the remaining ranks when the first one exits 3, as
//    `srun --kill-on-bad-exit` does, still gets the resumable code), else 128 + signal.
//    The same signal again within kEchoSeconds is the first one delivered twice (GNU
//    timeout signals lockstep and its process group), not a second one.
// The flag is process-wide state by nature (a signal handler's); nothing else is.
#pragma once

namespace lockstep::stop_signal {

inline constexpr double kEchoSeconds = 1.0;

void install();
int pending();  // the first signal number received, 0 if none
void mark_durable();  // the stop checkpoint is on disk: a further signal exits 3
// SIGUSR2: asks for a flight-record dump, the job goes on. Installed by itself when the
// watchdog starts (mpi_runtime.cpp), so a job stuck in start-up (data load, pre-flight,
// resume) answers it too instead of dying of the signal's default action; install() sets it
// again with the others. True once per signal received.
void install_dump_request();
bool take_dump_request();

}  // namespace lockstep::stop_signal
