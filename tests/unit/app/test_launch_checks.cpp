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

// Sets NAME=VALUE for one scope, restoring what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() { had_ ? ::setenv(name_, old_.c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

}  // namespace

TEST(LaunchChecks, ASerialToolStartedAsSeveralCopiesIsRefused) {
  {
    ScopedEnv size("PMI_SIZE", "1");
    EXPECT_NO_THROW(require_single_process("export"));
  }
  ScopedEnv size("OMPI_COMM_WORLD_SIZE", "2");
  EXPECT_THROW(require_single_process("export"), UsageError);
  EXPECT_ERROR_CONTAINS(require_single_process("export"), "lockstep export is a serial tool, but OMPI_COMM_WORLD_SIZE=2");
}

TEST(LaunchChecks, RanksTheLauncherStartedButMpiDidNotConnectAreRefused) {
  ScopedEnv size("PMI_SIZE", "3");
  EXPECT_THROW(require_connected_ranks(1), UsageError);
  EXPECT_ERROR_CONTAINS(require_connected_ranks(1), "several processes (PMI_SIZE=3), but MPI gives this one a world of 1");
  EXPECT_NO_THROW(require_connected_ranks(3));  // connected
}
