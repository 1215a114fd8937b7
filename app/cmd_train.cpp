// cmd_train: the commands that run under MPI: `lockstep train`, `evaluate`, `doctor`.
//
// 1. Every rank parses the same argv (no communication): a usage error is printed by
//    rank 0 and every rank exits 2 after a clean MPI_Finalize.
// 2. During the run, an exception on any rank is logged by that rank with its rank and
//    host, and the job is ended at once with MPI_Abort (code 2 for a usage error found
//    late, 1 otherwise): the other ranks may be inside a collective and would wait forever.
#include <iostream>

#include "app/commands.hpp"
#include "app/options.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/mpi_runtime.hpp"
#include "core/doctor.hpp"
#include "core/trainer.hpp"

namespace lockstep::app {
namespace {

using Runner = int (*)(const Config&, const MpiRuntime&);
using Parser = ParseResult (*)(const std::vector<std::string>&, Config*);

int run_under_mpi(int* argc, char*** argv, const Args& args, Parser parse, Runner run) {
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
  // A signal stop is agreed by all ranks: they all reach MPI_Finalize and exit 3.
  if (code != kExitOk && code != kExitResumable && mpi.size() > 1) mpi.abort(code);
  return code;
}

}  // namespace

int cmd_train(int* argc, char*** argv, const Args& args) {
  return run_under_mpi(argc, argv, args, parse_train, run_training);
}

int cmd_doctor(int* argc, char*** argv, const Args& args) {
  return run_under_mpi(argc, argv, args, parse_doctor, run_doctor);
}

int cmd_evaluate(int* argc, char*** argv, const Args& args) {
  return run_under_mpi(argc, argv, args, parse_evaluate, run_evaluation);
}

}  // namespace lockstep::app
