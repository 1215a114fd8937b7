// The MPI runtime shared by all tests of the MPI test binary.
#pragma once

#include <string>

namespace lockstep {
class MpiRuntime;
}

namespace lockstep::testing {
const MpiRuntime& mpi();
// An empty directory every rank sees: rank 0 makes TempDir()/lockstep-TAG-PID, first removing
// what an earlier run with the same pid left there (it would be resumed from), and every rank
// returns once it exists (or every rank throws, naming the directory rank 0 could not make).
std::string fresh_shared_dir(const std::string& tag);
}
