// stop_signal: see stop_signal.hpp.
#include "core/dist/stop_signal.hpp"

#include <unistd.h>

#include <csignal>

namespace lockstep::stop_signal {
namespace {

volatile std::sig_atomic_t g_signal = 0;
volatile std::sig_atomic_t g_durable = 0;
volatile std::sig_atomic_t g_dump = 0;

void on_dump_signal(int) { g_dump = 1; }

void on_signal(int sig) {
  if (g_signal != 0) _exit(g_durable ? 3 : 128 + sig);  // second signal: no more waiting
  g_signal = sig;
}

}  // namespace

void install() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
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
