// nccl_communicator: the NCCL backend of communicator.hpp. Device memory; each operation
// is enqueued on the communicator's own CUDA stream after the work issued so far on the
// caller's current stream (an event; the current stream is taken at each call, so a run on
// a side stream is ordered right). The current stream waits for the reductions only at
// wait_all() (another event: the last operation's, as they complete in order on one
// stream), so backward goes on while the buckets reduce; a broadcast is waited for at once.
// The host never blocks, and the watchdog polls each operation's event.
//
// Built by make_nccl_communicator, steps 1-4 of nccl_bootstrap.hpp's protocol.
//
// Lifetime (the NCCL communicator):
// - it registers an abort hook with the runtime (ncclCommAbort before MPI_Abort) and
//   watchdog polls of its operations (CUDA event state, ncclCommGetAsyncError);
// - destroy(), on the normal path, drains its stream and calls ncclCommDestroy, each
//   under the watchdog; it first removes its polls and its hook;
// - the destructor, reached when a run unwinds after an error, removes them too and calls
//   ncclCommAbort (never Destroy, which waits for peers that may be gone). No hook or
//   poll ever runs on a destroyed communicator.
#pragma once

#include <memory>

#include "core/dist/communicator.hpp"

namespace lockstep {

class MpiRuntime;

// A ready NCCL communicator on this rank's GPU (DEVICE). Collective.
std::unique_ptr<Communicator> make_nccl_communicator(const MpiRuntime& mpi, int device);

}  // namespace lockstep
