// lockstep: synchronous data-parallel training. `lockstep <command> --help` for each.
//
// main() owns the top-level error policy (STYLE rule 3): an exception anywhere is
// reported as one line "[rank R@HOST] error: ..." and ends the process with a non-zero
// code; under MPI with more than one rank the whole job is ended with MPI_Abort so no rank
// is left waiting in a collective (see cmd_train.cpp).
#include <csignal>
#include <cstring>
#include <iostream>

#include <fmt/format.h>

#include "app/commands.hpp"
#include "core/dist/version_info.hpp"
#include "core/base/error.hpp"
#include "core/base/host_allocator.hpp"
#include "core/base/log.hpp"

namespace {

const char* kUsage =
    "usage: lockstep <command> [options]\n"
    "\n"
    "commands:\n"
    "  shard     make HDF5 shards of a dataset     lockstep shard --input idx:DIR --output DIR --shards N\n"
    "  train     train a model (under mpirun/srun)  lockstep train --config jobs/fashion_mnist.ini\n"
    "  evaluate  test-split accuracy of a checkpoint lockstep evaluate --checkpoint PATH --data DIR\n"
    "  predict   predictions for any split, in order  lockstep predict --checkpoint PATH --data DIR --out p.csv|p.h5\n"
    "  export    weights as safetensors for PyTorch  lockstep export --checkpoint PATH --out model.safetensors\n"
    "  doctor    check ranks, MPI, NCCL, data, all-reduce speed before a long job\n"
    "                                               srun lockstep doctor --config jobs/X.ini\n"
    "  report    compare runs: table, curves (SVG, HTML)   lockstep report RUN_DIR... | SWEEP_ROOT\n"
    "            (a scaling sweep's table and plot: lockstep report SWEEP_DIR; traces: --trace RUN_DIR)\n"
    "  sweep     the runs of a hyper-parameter sweep file   lockstep sweep FILE (slurm/sweep.sh submits them)\n"
    "  inspect   print a shard's, dataset's or checkpoint's metadata   lockstep inspect PATH [--verify]\n"
    "\n"
    "`lockstep --version` names lockstep, LibTorch, CUDA/NCCL, MPI and HDF5.\n"
    "`lockstep <command> --help` lists a command's options. Exit codes: 0 ok, 1 runtime error,\n"
    "2 usage error, 3 stopped by a signal and resumable.\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace lockstep;
  configure_host_allocator();  // before the first large allocation
  // A launcher that is shutting down (mpirun after SIGTERM) closes the ranks' output
  // pipes first: a log line must then fail quietly, not kill the rank with SIGPIPE
  // before it has checkpointed.
  std::signal(SIGPIPE, SIG_IGN);
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    std::cout << kUsage;
    return argc < 2 ? kExitUsage : kExitOk;
  }
  if (!std::strcmp(argv[1], "--version") || !std::strcmp(argv[1], "version")) {
    for (const auto& [name, version] : version_items()) fmt::print("{:<9} {}\n", name, version);
    return kExitOk;
  }
  const std::string command = argv[1];
  const app::Args args(argv + 2, argv + argc);
  try {
    if (command == "shard") return app::cmd_shard(args);
    if (command == "inspect") return app::cmd_inspect(args);
    if (command == "train") return app::cmd_train(&argc, &argv, args);
    if (command == "evaluate") return app::cmd_evaluate(&argc, &argv, args);
    if (command == "doctor") return app::cmd_doctor(&argc, &argv, args);
    if (command == "report") return app::cmd_report(args);
    if (command == "predict") return app::cmd_predict(&argc, &argv, args);
    if (command == "export") return app::cmd_export(args);
    if (command == "sweep") return app::cmd_sweep(args);
    std::cerr << "lockstep: unknown command '" << command
              << "' (shard, train, evaluate, predict, export, doctor, report, inspect; --help)\n";
    return kExitUsage;
  } catch (const UsageError& e) {
    log::error(e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    log::error(e.what());
    return kExitFailure;
  }
}
