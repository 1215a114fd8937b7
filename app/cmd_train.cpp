// cmd_train: `lockstep train` — parse, then core/train/trainer under MPI.
#include "app/commands.hpp"
#include "app/mpi_command.hpp"
#include "core/train/trainer.hpp"

namespace lockstep::app {

int cmd_train(int* argc, char*** argv, const Args& args) {
  return run_under_mpi(argc, argv, args, parse_train, run_training);
}

}  // namespace lockstep::app
