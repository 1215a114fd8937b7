// cmd_evaluate: `lockstep evaluate` — parse, then core/tools/evaluate_command under MPI.
#include "app/commands.hpp"
#include "app/mpi_command.hpp"
#include "core/tools/evaluate_command.hpp"

namespace lockstep::app {

int cmd_evaluate(int* argc, char*** argv, const Args& args) {
  return run_under_mpi(argc, argv, args, parse_evaluate, run_evaluation);
}

}  // namespace lockstep::app
