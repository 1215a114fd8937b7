// stop_signal: SIGTERM / SIGUSR1 (Slurm's time limit and --signal=USR1@T) stop a run
// cleanly.
//
// 1. install() sets handlers; the first signal only sets a flag (async-signal-safe);
// 2. at every step boundary all ranks agree on the flag (one MPI_Allreduce of one
//    number, max over ranks), so a signal that reached one rank stops all of them;
// 3. the trainer then writes a checkpoint (rank 0) and every rank exits with
//    kExitResumable (3): `--resume auto` continues from that step;
// 4. a second signal exits the process at once (128 + signal number).
// The flag is process-wide state by nature (a signal handler's); nothing else is.
#pragma once

namespace lockstep::stop_signal {

void install();
int pending();  // the first signal number received, 0 if none

}  // namespace lockstep::stop_signal
