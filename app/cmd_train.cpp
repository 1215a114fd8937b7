// cmd_train: `lockstep train` — parse, then core/train/trainer under MPI.
#include "app/commands.hpp"
#include "app/mpi_command.hpp"
#include "core/dist/stop_signal.hpp"
#include "core/train/trainer.hpp"

namespace lockstep::app {

int cmd_train(int* argc, char*** argv, const Args& args) {
  // Before anything else: a SIGUSR1 (Slurm's --signal lead time) or SIGTERM during MPI start-up,
  // the data load, pre-flight or resume killed the rank by the signal's default action, the job
  // lost and never requeued (a hostile finding). Held, it stops the run before its first step.
  stop_signal::install();
  return run_under_mpi(argc, argv, args, parse_train, run_training);
}

}  // namespace lockstep::app
