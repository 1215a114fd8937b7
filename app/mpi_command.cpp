// mpi_command: see mpi_command.hpp.
#include "app/mpi_command.hpp"

#include <iostream>

#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/dist/mpi_runtime.hpp"

namespace lockstep::app {

int run_under_mpi(int* argc, char*** argv, const std::vector<std::string>& args, Parser parse, Runner run) {
  MpiRuntime mpi(argc, argv);
  Config cfg;
  const ParseResult parsed = parse(args, &cfg);
  if (parsed.status == ParseStatus::kExitOk) {
    if (mpi.rank() == 0) std::cout << parsed.message;
    return kExitOk;
  }
  if (parsed.status == ParseStatus::kError) {
    if (mpi.rank() == 0) log::error(parsed.message + " (see --help)");
    return kExitUsage;
  }
  mpi.start_watchdog(cfg.comm_timeout);
  int code = kExitOk;
  try {
    code = run(cfg, mpi);
  } catch (const UsageError& e) {
    log::error(e.what());
    code = kExitUsage;
  } catch (const std::exception& e) {
    log::error(e.what());
    code = kExitFailure;
  }
  if (code != kExitOk && code != kExitResumable && mpi.size() > 1) mpi.abort(code);
  return code;
}

}  // namespace lockstep::app
