// signal_vote: see signal_vote.hpp.
#include "core/dist/signal_vote.hpp"

#include <algorithm>

#include "core/dist/checks.hpp"
#include "core/dist/mpi_runtime.hpp"

namespace lockstep {

SignalVote::SignalVote(const MpiRuntime& mpi) : mpi_(mpi) {
  MPI_CHECK(MPI_Comm_dup(mpi.comm(), &comm_));
  MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
}

SignalVote::~SignalVote() {
  // A vote still outstanding here means an error is ending the job (every normal path ends
  // with now()): the request and its communicator are left to MPI_Abort, since waiting could
  // hang on a rank that will never post, and freeing a communicator under an active
  // collective is not allowed.
  if (req_ == MPI_REQUEST_NULL && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

int SignalVote::complete() {
  if (req_ == MPI_REQUEST_NULL) return 0;
  Watchdog::Scope watch(mpi_.watchdog(), "MPI_Iallreduce (max) of the stop-signal vote");
  MPI_CHECK(MPI_Wait(&req_, MPI_STATUS_IGNORE));
  return result_;
}

int SignalVote::at_step(int mine) {
  if (const int sig = complete()) return sig;
  send_ = mine;
  result_ = 0;
  MPI_CHECK(MPI_Iallreduce(&send_, &result_, 1, MPI_INT, MPI_MAX, comm_, &req_));
  return 0;
}

int SignalVote::now(int mine) {
  const int earlier = complete();
  int all = mine;
  {
    Watchdog::Scope watch(mpi_.watchdog(), "MPI_Allreduce (max) of the stop-signal vote");
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MAX, comm_));
  }
  return std::max(earlier, all);
}

}  // namespace lockstep
