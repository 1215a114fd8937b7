// stop_signal: a stop signal delivered twice at once (GNU timeout signals lockstep and its
// process group) is one stop; a second one later still exits at once. Each case runs in a
// child process: the handlers are process-wide.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <functional>

#include "core/dist/stop_signal.hpp"

using namespace lockstep;

namespace {

// The exit status of a child that runs BODY after stop_signal::install() (-1: killed).
int status_of_child(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid == 0) {
    stop_signal::install();
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST(StopSignal, TheSameSignalTwiceAtOnceIsOneStop) {
  EXPECT_EQ(status_of_child([] {
              raise(SIGTERM);
              raise(SIGTERM);  // the echo: the run goes on to its stop checkpoint
              return stop_signal::pending() == SIGTERM ? 0 : 1;
            }),
            0);
}

TEST(StopSignal, ASecondSignalLaterOrAnotherOneExitsAtOnce) {
  EXPECT_EQ(status_of_child([] {
              raise(SIGTERM);
              usleep(static_cast<useconds_t>(stop_signal::kEchoSeconds * 1.2e6));
              raise(SIGTERM);
              return 0;
            }),
            128 + SIGTERM);
  EXPECT_EQ(status_of_child([] {
              raise(SIGUSR1);
              raise(SIGTERM);  // another signal: a second one, whenever it comes
              return 0;
            }),
            128 + SIGTERM);
  EXPECT_EQ(status_of_child([] {
              raise(SIGTERM);
              stop_signal::mark_durable();
              usleep(static_cast<useconds_t>(stop_signal::kEchoSeconds * 1.2e6));
              raise(SIGTERM);
              return 0;
            }),
            3);
}
