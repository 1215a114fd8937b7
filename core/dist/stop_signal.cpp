// stop_signal: see stop_signal.hpp.
#include "core/dist/stop_signal.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <ctime>

namespace lockstep::stop_signal {
namespace {

// Lock-free atomics (async-signal-safe): a process-directed signal runs its handler on any
// thread, and two of them (GNU timeout's echo) can run at once on two threads.
std::atomic<int> g_signal{0};
std::atomic<int64_t> g_first_ns{0};  // when the first signal came; 0 until its handler stored it
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free,
              "a signal handler may only touch lock-free atomics");
volatile std::sig_atomic_t g_durable = 0;
std::atomic<int> g_dump{0};  // set by the handler (any thread), taken by the watchdog's thread

void on_dump_signal(int) { g_dump.store(1); }

void on_signal(int sig) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  const int64_t ns = static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
  int first = 0;
  if (g_signal.compare_exchange_strong(first, sig)) {
    g_first_ns.store(ns);
    return;
  }
  // The same signal again within kEchoSeconds is one stop delivered twice: GNU timeout sends
  // it to lockstep and to its process group, a launcher may forward what the group got.
  // Taken as the second signal, it exited 143 before the stop checkpoint (a hostile finding).
  // A first handler that has not stored its time yet is microseconds away: an echo too.
  const int64_t at = g_first_ns.load();
  if (first == sig && (at == 0 || static_cast<double>(ns - at) < kEchoSeconds * 1e9)) return;
  _exit(g_durable ? 3 : 128 + sig);  // second signal: no more waiting
}

}  // namespace

void install() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);
  install_dump_request();
}

void install_dump_request() {
  struct sigaction dump {};
  dump.sa_handler = on_dump_signal;
  sigemptyset(&dump.sa_mask);
  dump.sa_flags = SA_RESTART;
  sigaction(SIGUSR2, &dump, nullptr);
}

bool take_dump_request() {
  return g_dump.exchange(0) != 0;  // one read-and-clear: a signal between the two is not lost
}

int pending() { return g_signal.load(); }

void mark_durable() { g_durable = 1; }

}  // namespace lockstep::stop_signal
