// cmd_doctor: `lockstep doctor` — parse, then core/tools/doctor under MPI.
#include "app/commands.hpp"
#include "app/mpi_command.hpp"
#include "core/tools/doctor.hpp"

namespace lockstep::app {

int cmd_doctor(int* argc, char*** argv, const Args& args) {
  return run_under_mpi(argc, argv, args, parse_doctor, run_doctor);
}

}  // namespace lockstep::app
