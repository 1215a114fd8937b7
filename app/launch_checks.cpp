// launch_checks: see launch_checks.hpp.
#include "app/launch_checks.hpp"

#include <cstdlib>
#include <string>

#include "core/base/env.hpp"
#include "core/base/error.hpp"

namespace lockstep::app {
namespace {

constexpr const char* kSizeVariables[] = {env::kOmpiWorldSize, env::kPmiSize, env::kPmixSize, env::kSlurmStepTasks};

// The first launcher variable that says more than one process ("NAME=N"), "" when none.
std::string several_copies() {
  for (const char* var : kSizeVariables)
    if (const char* v = env::get(var); v != nullptr && std::atoi(v) > 1) return std::string(var) + "=" + v;
  return "";
}

}  // namespace

void require_single_process(const char* command) {
  if (const std::string said = several_copies(); !said.empty())
    throw UsageError(std::string("lockstep ") + command + " is a serial tool, but " + said +
                     ": run it as one process (no mpirun/srun -n > 1)");
}

void require_connected_ranks(int world_size) {
  if (world_size > 1) return;
  if (const std::string said = several_copies(); !said.empty())
    throw UsageError("the launcher started several processes (" + said + "), but MPI gives this one a world of 1 "
                     "rank: the ranks are not connected, and each would run alone. Launch with the MPI lockstep was "
                     "built with (lockstep --version names it); under srun pass --mpi=pmix");
}

}  // namespace lockstep::app
