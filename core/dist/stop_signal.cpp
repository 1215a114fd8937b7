// stop_signal: see stop_signal.hpp.
#include "core/dist/stop_signal.hpp"

#include <unistd.h>

#include <csignal>
#include <ctime>

namespace lockstep::stop_signal {
namespace {

volatile std::sig_atomic_t g_signal = 0;
volatile std::sig_atomic_t g_durable = 0;
volatile std::sig_atomic_t g_dump = 0;
timespec g_first{};  // when the first signal came (the handlers alone touch it; they block each other)

void on_dump_signal(int) { g_dump = 1; }

void on_signal(int sig) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  if (g_signal != 0) {
    // The same signal again within a second is one stop delivered twice: GNU timeout sends
    // it to lockstep and to its process group, a launcher may forward what the group got.
    // Taken as the second signal, it exited 143 before the stop checkpoint (a hostile finding).
    const double since = static_cast<double>(now.tv_sec - g_first.tv_sec) +
                         1e-9 * static_cast<double>(now.tv_nsec - g_first.tv_nsec);
    if (sig == g_signal && since < kEchoSeconds) return;
    _exit(g_durable ? 3 : 128 + sig);  // second signal: no more waiting
  }
  g_first = now;
  g_signal = sig;
}

}  // namespace

void install() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGTERM);  // one handler at a time: g_first is theirs alone
  sigaddset(&sa.sa_mask, SIGUSR1);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);
  struct sigaction dump {};
  dump.sa_handler = on_dump_signal;
  sigemptyset(&dump.sa_mask);
  dump.sa_flags = SA_RESTART;
  sigaction(SIGUSR2, &dump, nullptr);
}

bool take_dump_request() {
  if (!g_dump) return false;
  g_dump = 0;
  return true;
}

int pending() { return static_cast<int>(g_signal); }

void mark_durable() { g_durable = 1; }

}  // namespace lockstep::stop_signal
