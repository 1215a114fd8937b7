// What the launcher's environment says: a serial tool started as several copies, and ranks a
// launcher started that MPI did not connect, are refused naming the variable.
#include <gtest/gtest.h>

#include <cstdlib>

#include "app/launch_checks.hpp"
#include "core/base/error.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::app;

namespace {

// Sets NAME=VALUE (nullptr: unsets it) for one scope, restoring what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { had_ ? ::setenv(name_, old_.c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

}  // namespace

// The test may itself run under a launcher (ctest inside an srun step): none of its variables.
struct NoLauncher {
  ScopedEnv a{"OMPI_COMM_WORLD_SIZE", nullptr}, b{"PMI_SIZE", nullptr}, c{"PMIX_SIZE", nullptr},
      d{"SLURM_STEP_NUM_TASKS", nullptr};
};

TEST(LaunchChecks, ASerialToolStartedAsSeveralCopiesIsRefused) {
  const NoLauncher clean;
  EXPECT_NO_THROW(require_single_process("export"));
  {
    ScopedEnv size("PMI_SIZE", "1");
    EXPECT_NO_THROW(require_single_process("export"));
  }
  ScopedEnv size("OMPI_COMM_WORLD_SIZE", "2");
  EXPECT_THROW(require_single_process("export"), UsageError);
  EXPECT_ERROR_CONTAINS(require_single_process("export"), "lockstep export is a serial tool, but OMPI_COMM_WORLD_SIZE=2");
}

TEST(LaunchChecks, RanksTheLauncherStartedButMpiDidNotConnectAreRefused) {
  const NoLauncher clean;
  {
    ScopedEnv step("SLURM_STEP_NUM_TASKS", "8");  // a task of an srun step starting a 1-rank job
    EXPECT_NO_THROW(require_connected_ranks(1));
    ScopedEnv inner("OMPI_COMM_WORLD_SIZE", "1");  // mpirun -np 1 inside a bigger launch
    EXPECT_NO_THROW(require_connected_ranks(1));
  }
  ScopedEnv size("PMI_SIZE", "3");
  EXPECT_THROW(require_connected_ranks(1), UsageError);
  EXPECT_ERROR_CONTAINS(require_connected_ranks(1), "several processes (PMI_SIZE=3), but MPI gives this one a world of 1");
  EXPECT_NO_THROW(require_connected_ranks(3));  // connected
}
