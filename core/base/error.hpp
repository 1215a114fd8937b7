// error: the one exception type lockstep throws, and the check helper shape every library
// wrapper (MPI_CHECK, NCCL_CHECK, CUDA_CHECK, H5_CHECK) follows.
//
// Errors are values with a location: the message names what failed, the library's own
// error string and file:line. Rank and host are added once, by the logger, when main()
// reports the error (see app/main.cpp), so they are never repeated or forgotten.
#pragma once

#include <stdexcept>
#include <string>

namespace lockstep {

// Exit codes shared by every command; documented in README.md.
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,    // runtime error (bad data, I/O, a failed collective)
  kExitUsage = 2,      // unknown option, bad value, missing required option
  kExitResumable = 3,  // stopped cleanly on SIGTERM/SIGUSR1 after a checkpoint; --resume auto continues
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A bad option or config value: reported as one line, exit code 2.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(what) {}
};

// Throws Error("<what> (<file>:<line>)").
[[noreturn]] void throw_at(const std::string& what, const char* file, int line);

}  // namespace lockstep

// Checks a condition that depends on input or the environment (never a programming
// invariant): throws lockstep::Error with the message and file:line when it is false.
#define LOCKSTEP_REQUIRE(cond, msg)                                   \
  do {                                                                \
    if (!(cond)) ::lockstep::throw_at((msg), __FILE__, __LINE__);     \
  } while (0)
