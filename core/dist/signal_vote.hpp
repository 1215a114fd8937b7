// signal_vote: every rank learns at the same step whether any rank was signalled, without a
// barrier per step.
//
// A blocking MPI_Allreduce of the stop flag at every step boundary ties every rank's host to
// every other's once a step; on GPUs, where the step is queued on the device, that is a host
// sync across the job each step. Instead the vote is posted at step k (MPI_Iallreduce, max
// of each rank's pending signal) and completed at step k+1, where it has long arrived: a
// signal stops the job one step later than a blocking vote would, on the same step on every
// rank, because every rank posts and completes at the same boundaries.
//   at_step(mine): completes the vote posted at the previous call (if any) and returns its
//                  result when a rank was signalled (nothing new is posted then: the caller
//                  stops); else posts MINE and returns 0.
//   now(mine):     blocking: completes an outstanding vote, then agrees on MINE; returns the
//                  largest signal either saw (after the loop, before the final evaluation).
// Votes go over a communicator of their own (MPI_Comm_dup), so an outstanding one never
// shares a communicator with the gradient reductions or the trainer's other collectives.
// Completing a vote is a collective: the watchdog names it if a rank never arrives.
// Collective: constructed, at_step and now called by every rank in the same order.
#pragma once

#include <mpi.h>

namespace lockstep {

class MpiRuntime;

class SignalVote {
 public:
  explicit SignalVote(const MpiRuntime& mpi);
  ~SignalVote();
  SignalVote(const SignalVote&) = delete;
  SignalVote& operator=(const SignalVote&) = delete;

  int at_step(int mine);
  int now(int mine);
  bool outstanding() const { return req_ != MPI_REQUEST_NULL; }

 private:
  int complete();  // waits for the outstanding vote; 0 when none

  const MpiRuntime& mpi_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Request req_ = MPI_REQUEST_NULL;
  int send_ = 0, result_ = 0;  // the posted vote's buffers: untouched until it completes
};

}  // namespace lockstep
