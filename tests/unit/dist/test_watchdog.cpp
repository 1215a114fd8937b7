// The collective watchdog: fires once for an overdue operation, never for finished ones.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/dist/watchdog.hpp"

using lockstep::Watchdog;
using namespace std::chrono_literals;

TEST(Watchdog, QuickOperationsNeverFire) {
  std::atomic<int> fired{0};
  Watchdog w(0.2, [&](const std::string&) { ++fired; });
  for (int i = 0; i < 50; ++i) Watchdog::Scope s(&w, "quick");
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(fired.load(), 0);
}

TEST(Watchdog, OverdueOperationFiresOnceNamingIt) {
  std::atomic<int> fired{0};
  std::string cause;
  std::mutex mu;
  Watchdog w(0.2, [&](const std::string& c) {
    std::lock_guard<std::mutex> lock(mu);
    cause = c;
    ++fired;
  });
  const uint64_t id = w.begin("MPI_Allreduce of gradient bucket 3/5");
  std::this_thread::sleep_for(700ms);
  EXPECT_EQ(fired.load(), 1);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_NE(cause.find("MPI_Allreduce of gradient bucket 3/5 has not completed after"), std::string::npos) << cause;
  EXPECT_NE(cause.find("the flight records below say where each rank was"), std::string::npos) << cause;
  EXPECT_NE(cause.find("--dist.comm-timeout 0.2 s"), std::string::npos) << cause;
  w.end(id);
}

TEST(Watchdog, AsyncWorkIsPolledUntilDone) {
  std::atomic<int> fired{0};
  std::atomic<bool> done{false};
  Watchdog w(0.3, [&](const std::string&) { ++fired; });
  w.watch("ncclAllReduce", [&] { return done.load() ? Watchdog::Poll::done() : Watchdog::Poll::pending(); });
  std::this_thread::sleep_for(100ms);
  done = true;
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(fired.load(), 0);
  w.watch("never", [] { return Watchdog::Poll::pending(); });
  std::this_thread::sleep_for(600ms);
  EXPECT_EQ(fired.load(), 1);
}

TEST(Watchdog, AFailedPollEndsTheJobAtOnceNamingWhy) {
  std::atomic<int> fired{0};
  std::mutex mu;
  std::string cause;
  Watchdog w(60.0, [&](const std::string& c) {
    std::lock_guard<std::mutex> lock(mu);
    cause = c;
    ++fired;
  });
  // Before the fix a failed cudaEventQuery counted as done and NCCL's asynchronous error
  // was never read: the job waited out the whole timeout, or forever.
  w.watch("ncclAllReduce of gradient bucket 1/3", [] { return Watchdog::Poll::failed("NCCL asynchronous error: remote process exited"); });
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(fired.load(), 1);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_NE(cause.find("ncclAllReduce of gradient bucket 1/3 failed: NCCL asynchronous error: remote process exited"),
            std::string::npos) << cause;
  // ... and what to do next (docs/troubleshooting.md "NCCL errors").
  EXPECT_NE(cause.find("ending the job — next: lockstep doctor under the same launcher"), std::string::npos) << cause;
}

TEST(Watchdog, ForgottenWatchesAreNeverPolledAgain) {
  std::atomic<int> polls{0}, fired{0};
  Watchdog w(0.2, [&](const std::string&) { ++fired; });
  int owner = 0;
  w.watch("ncclAllReduce", [&] { ++polls; return Watchdog::Poll::pending(); }, &owner);
  std::this_thread::sleep_for(50ms);
  w.forget(&owner);  // a communicator about to destroy what the poll touches
  const int seen = polls.load();
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(polls.load(), seen);
  EXPECT_EQ(fired.load(), 0);
}
