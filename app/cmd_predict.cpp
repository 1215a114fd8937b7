// cmd_predict: `lockstep predict` — parse, then core/tools/predict_command under MPI.
#include "app/commands.hpp"
#include "app/mpi_command.hpp"
#include "core/tools/predict_command.hpp"

namespace lockstep::app {

int cmd_predict(int* argc, char*** argv, const Args& args) {
  return run_under_mpi(argc, argv, args, parse_predict, run_prediction);
}

}  // namespace lockstep::app
