// The MPI runtime shared by all tests of the MPI test binary.
#pragma once

namespace lockstep {
class MpiRuntime;
}

namespace lockstep::testing {
const MpiRuntime& mpi();
}
