// mpi_command: see mpi_command.hpp.
#include "app/mpi_command.hpp"

#include <iostream>

#include "app/launch_checks.hpp"
#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/dist/mpi_runtime.hpp"

namespace lockstep::app {

int run_under_mpi(int* argc, char*** argv, const std::vector<std::string>& args, Parser parse, Runner run) {
  MpiRuntime mpi(argc, argv);
  require_connected_ranks(mpi.size());
  Config cfg;
  const ParseResult parsed = parse(args, &cfg);
  // Every rank parses its own argv and config file, and one can fail alone (the file missing
  // on one node, an older binary there): it returned while the others went on into the first
  // collective, which waited without a word until the watchdog blamed "a stalled rank" (a
  // hostile finding). So the ranks agree first. A refusal every rank shares is printed by rank
  // 0; one that rank 0 does not share, by each rank that has it.
  const auto code_of = [](ParseStatus s) { return s == ParseStatus::kError ? 2.0 : s == ParseStatus::kExitOk ? 1.0 : 0.0; };
  double worst[2] = {code_of(parsed.status), mpi.rank() == 0 ? code_of(parsed.status) : 0.0};  // any rank's, rank 0's
  if (mpi.size() > 1) mpi.allreduce_max(worst, 2);
  if (worst[0] == 2.0) {
    // Rank 0's reason, and each other rank's that differs from it (one line when all agree).
    const std::string first = mpi.size() > 1 ? mpi.broadcast_string(mpi.rank() == 0 ? parsed.message : "", 0) : "";
    if (parsed.status == ParseStatus::kError && (mpi.rank() == 0 || worst[1] != 2.0 || parsed.message != first))
      log::error(parsed.message + " (see --help)");
    else if (mpi.rank() == 0 && parsed.status != ParseStatus::kError)
      log::error("a rank other than 0 refused its options (each such rank prints why): every rank stops");
    return kExitUsage;
  }
  if (worst[0] == 1.0) {  // --help (or --version) on some rank: each rank that asked prints once, rank 0 first
    if (parsed.status == ParseStatus::kExitOk && (mpi.rank() == 0 || worst[1] != 1.0)) std::cout << parsed.message;
    return kExitOk;
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
