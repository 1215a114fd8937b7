// SignalVote: the deferred stop-flag agreement lands on the same step on every rank, one
// step after the signal, with gradient-like traffic on the main communicator in between.
#include <gtest/gtest.h>

#include <vector>

#include "core/dist/mpi_runtime.hpp"
#include "core/dist/signal_vote.hpp"
#include "mpi_test_env.hpp"

using namespace lockstep;
using lockstep::testing::mpi;

namespace {

// Runs steps 1..N; the last rank "receives" SIG at step SIGNAL_AT (sticky, as the handler's
// flag is). Returns the step at which at_step told this rank to stop (0: never).
int stop_step(SignalVote& vote, int signal_at, int sig, int steps) {
  const int last = mpi().size() - 1;
  for (int step = 1; step <= steps; ++step) {
    double grads[4] = {1, 2, 3, 4};
    mpi().allreduce_sum(grads, 4);  // the step's own collectives go on meanwhile
    const int mine = (mpi().rank() == last && signal_at > 0 && step >= signal_at) ? sig : 0;
    if (const int got = vote.at_step(mine)) {
      EXPECT_EQ(got, sig) << "rank " << mpi().rank();
      EXPECT_FALSE(vote.outstanding()) << "a stop posts no further vote";
      return step;
    }
  }
  return 0;
}

std::vector<double> every_rank(double v) {
  std::vector<double> all(mpi().size(), 0.0);
  all[mpi().rank()] = v;
  mpi().allreduce_sum(all.data(), static_cast<int>(all.size()));
  return all;
}

}  // namespace

TEST(SignalVote, StopLandsOneStepLaterOnTheSameStepEverywhere) {
  SignalVote vote(mpi());
  const int at = stop_step(vote, /*signal_at=*/4, /*sig=*/15, /*steps=*/10);
  EXPECT_EQ(at, 5) << "posted at step 4, completed at step 5";
  for (double s : every_rank(at)) EXPECT_EQ(s, 5.0);
}

TEST(SignalVote, NoSignalNoStopAndNowDrainsTheLastVote) {
  SignalVote vote(mpi());
  EXPECT_EQ(stop_step(vote, /*signal_at=*/0, 15, /*steps=*/6), 0);
  EXPECT_TRUE(vote.outstanding());
  EXPECT_EQ(vote.now(0), 0);
  EXPECT_FALSE(vote.outstanding());
}

TEST(SignalVote, ASignalAtTheLastStepIsSeenByNow) {
  // The loop ends (max-steps, epoch end) with the signalled vote still outstanding: the
  // blocking agreement after the loop takes it, even from ranks whose flag reads 0 now.
  SignalVote vote(mpi());
  EXPECT_EQ(stop_step(vote, /*signal_at=*/6, 10, /*steps=*/6), 0);
  EXPECT_EQ(vote.now(0), 10);
  // And a signal arriving only after the last vote was posted.
  EXPECT_EQ(vote.now(mpi().rank() == 0 ? 12 : 0), 12);
}
