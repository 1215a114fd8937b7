// main() for the MPI test binary: MPI is initialised once for all tests; only rank 0
// prints GoogleTest's output; the exit code is the worst over all ranks, so a test that
// fails on rank 1 alone fails the run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/dist/mpi_runtime.hpp"
#include "io/util/file_util.hpp"
#include "mpi_test_env.hpp"

namespace lockstep::testing {
namespace {
MpiRuntime* g_mpi = nullptr;
std::vector<std::string> g_shared_dirs;  // rank 0's, removed after the last test when all passed
}
const MpiRuntime& mpi() { return *g_mpi; }

std::string fresh_shared_dir(const std::string& tag) {
  const std::string dir = ::testing::TempDir() + "/lockstep-" + tag + "-" + std::to_string(::getpid());
  std::string made;  // rank 0: the directory, or "" when it could not be made
  if (g_mpi->rank() == 0) {
    try {
      io::remove_tree(dir);  // an earlier run's of the same pid (not std::filesystem's: file_util.hpp)
      io::make_dirs(dir);
      made = dir;
      g_shared_dirs.push_back(dir);
    } catch (const std::exception&) {  // every rank hears of it below: no rank waits alone
    }
  }
  made = g_mpi->broadcast_string(made, 0);
  if (made.empty())
    throw std::runtime_error("rank 0 could not make a fresh lockstep-" + tag + "-PID under " + ::testing::TempDir());
  return made;
}
}  // namespace lockstep::testing

int main(int argc, char** argv) {
  // gpu_tests (this main too) compare an eager step with its CUDA-graph replay exactly (fp16
  // skip counts, loss scale): cuBLAS picks reproducible algorithms only with a fixed workspace,
  // read when its first handle is made. A value the caller set is kept; CPU tests ignore it.
  ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  lockstep::MpiRuntime runtime(&argc, &argv);
  lockstep::testing::g_mpi = &runtime;
  ::testing::InitGoogleTest(&argc, argv);
  if (runtime.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = failed;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, runtime.comm());
  if (runtime.rank() == 0 && any_failed && !failed)
    std::fprintf(stderr, "a test failed on another rank (its output is above, prefixed by rank)\n");
  if (runtime.rank() == 0 && !any_failed) {  // every rank is past its last test: nothing reads them
    for (const auto& dir : lockstep::testing::g_shared_dirs) {
      try {
        lockstep::io::remove_tree(dir);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "could not remove %s: %s\n", dir.c_str(), e.what());
      }
    }
  }
  return any_failed;
}
