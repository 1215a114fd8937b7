// mpi_command: how every command that runs under MPI (train, evaluate, doctor) starts and
// ends (STYLE rule 3):
// 1. every rank parses its argv and config file, then the ranks agree on the outcome (one
//    small all-reduce): a usage error on any rank is printed (by rank 0 when every rank
//    has it, else by the ranks that do) and every rank exits 2 after a clean MPI_Finalize;
// 2. the collective watchdog starts (--dist.comm-timeout);
// 3. during the run, an exception on any rank is logged by that rank with its rank and
//    host, and the job is ended at once with MPI_Abort (code 2 for a usage error found
//    late, 1 otherwise): the other ranks may be inside a collective and would wait forever.
//    A signal stop (exit 3) is agreed by all ranks: they all reach MPI_Finalize.
#pragma once

#include <string>
#include <vector>

#include "app/options.hpp"
#include "core/config/config.hpp"

namespace lockstep {
class MpiRuntime;
}

namespace lockstep::app {

using Runner = int (*)(const Config&, const MpiRuntime&);
using Parser = ParseResult (*)(const std::vector<std::string>&, Config*);

int run_under_mpi(int* argc, char*** argv, const std::vector<std::string>& args, Parser parse, Runner run);

}  // namespace lockstep::app
