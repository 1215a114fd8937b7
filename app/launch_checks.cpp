// launch_checks: see launch_checks.hpp.
#include "app/launch_checks.hpp"

#include <cstdlib>
#include <iterator>
#include <string>

#include "core/base/env.hpp"
#include "core/base/error.hpp"

namespace lockstep::app {
namespace {

// The innermost launcher first: mpirun's, then a PMI's; srun's step size last (a step's
// tasks inherit it, whatever they start inside).
constexpr const char* kSizeVariables[] = {env::kOmpiWorldSize, env::kPmiSize, env::kPmixSize, env::kSlurmStepTasks};

// What the innermost launcher that set one of the first COUNT variables says, "NAME=N" when
// N > 1, "" otherwise.
std::string several_copies(size_t count) {
  for (size_t i = 0; i < count && i < std::size(kSizeVariables); ++i)
    if (const char* v = env::get(kSizeVariables[i])) return std::atoi(v) > 1 ? std::string(kSizeVariables[i]) + "=" + v : "";
  return "";
}

}  // namespace

void require_single_process(const char* command) {
  if (const std::string said = several_copies(std::size(kSizeVariables)); !said.empty())
    throw UsageError(std::string("lockstep ") + command + " is a serial tool, but " + said +
                     ": run it as one process (no mpirun/srun -n > 1)");
}

void require_connected_ranks(int world_size) {
  if (world_size > 1) return;
  // The MPI launchers' variables only: a task of an srun step may start a 1-rank job itself.
  if (const std::string said = several_copies(3); !said.empty())
    throw UsageError("the launcher started several processes (" + said + "), but MPI gives this one a world of 1 "
                     "rank: the ranks are not connected, and each would run alone. Launch with the MPI lockstep was "
                     "built with (lockstep --version names it); under srun pass --mpi=pmix");
}

}  // namespace lockstep::app
