// log: see log.hpp.
#include "core/base/log.hpp"
#include "core/base/console_writer.hpp"
#include "core/base/env.hpp"

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <ctime>
#include <exception>
#include <memory>
#include <mutex>

#include <fcntl.h>
#include <unistd.h>

namespace lockstep::log {
namespace {

std::string this_host() {
  char name[256] = {0};
  return gethostname(name, sizeof name - 1) == 0 ? name : "unknown-host";
}

struct State {
  int rank = 0;
  int world = 1;
  std::string host = this_host();
  std::FILE* file = nullptr;
  std::mutex mu;  // lines from the main and background threads never interleave
  bool bar_shown = false;  // a progress bar is on stdout's current line
  // Open MPI's launcher hands every rank a pseudo-terminal for stdout even when its own
  // output goes to a file, so under mpirun "a terminal" is not evidence of a person.
  bool tty = isatty(STDOUT_FILENO) == 1 && env::get(env::kOmpiWorldSize) == nullptr;
  std::unique_ptr<ConsoleWriter> console;  // set: stdout/stderr written in the background
  std::terminate_handler previous_terminate = nullptr;  // chained after flushing the console
};

State& state() {
  static State s;
  return s;
}

std::string timestamp() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const std::time_t t = system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// TEXT to the console (FD 1 or 2): queued for the console thread when there is one (its
// ticket), else written before returning (0). Called with the state's lock held.
uint64_t to_console(State& s, int fd, std::string text) {
  if (s.console) return s.console->write(fd, std::move(text));
  std::FILE* stream = fd == STDERR_FILENO ? stderr : stdout;
  std::fputs(text.c_str(), stream);
  std::fflush(stream);
  return 0;
}

// LINE to the console (after clearing a progress bar, in the same write) and, if TO_FILE,
// to train.log. Returns the console ticket.
uint64_t emit(int fd, const std::string& line, bool to_file) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  uint64_t ticket = 0;
  if (s.bar_shown && fd == STDOUT_FILENO) {
    ticket = to_console(s, fd, "\r\x1b[K" + line);
  } else {
    if (s.bar_shown) to_console(s, STDOUT_FILENO, "\r\x1b[K");
    ticket = to_console(s, fd, line);
  }
  s.bar_shown = false;
  if (to_file && s.file) {
    std::fputs(line.c_str(), s.file);
    std::fflush(s.file);
  }
  return ticket;
}

// Waits (up to STALL_S without progress) until the console has written TICKET.
bool flush_to(uint64_t ticket, double stall_s) {
  State& s = state();
  ConsoleWriter* console = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    console = s.console.get();
  }
  return !console || console->drain(std::chrono::milliseconds(static_cast<int64_t>(stall_s * 1000)), ticket);
}

// An uncaught exception on any thread: the queued lines (the last warnings) first.
[[noreturn]] void flush_then_terminate() {
  flush_to(ConsoleWriter::kAll, 0.5);
  if (state().previous_terminate) state().previous_terminate();
  std::abort();
}

}  // namespace

void set_identity(int rank, int world, const std::string& host) {
  State& s = state();
  s.rank = rank;
  s.world = world;
  s.host = host;
}

void use_console_thread() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.console) return;
  s.console = std::make_unique<ConsoleWriter>();
  s.previous_terminate = std::set_terminate(flush_then_terminate);
}

bool flush_console(double stall_s) { return flush_to(ConsoleWriter::kAll, stall_s); }

int rank() { return state().rank; }
const std::string& host() { return state().host; }

bool set_file(const std::string& path) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.file) std::fclose(s.file);
  s.file = nullptr;
  if (path.empty() || s.rank != 0) return true;
  // Appended, never through a symbolic link planted under the log's name.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0664);
  if (fd >= 0) s.file = ::fdopen(fd, "a");
  if (fd >= 0 && !s.file) ::close(fd);
  return s.file != nullptr;
}

std::string where() {
  return "[rank " + std::to_string(state().rank) + "@" + state().host + "]";
}

void info0(const std::string& msg) {
  if (state().rank != 0) return;
  emit(STDOUT_FILENO, timestamp() + " " + msg + "\n", true);
}

void info0_lines(const std::string& text) {
  for (size_t at = 0; at < text.size();) {
    const size_t nl = std::min(text.find('\n', at), text.size());
    info0(text.substr(at, nl - at));
    at = nl + 1;
  }
}

bool interactive() { return state().tty; }

void force_progress_bar(bool bar) { state().tty = bar; }

void step0(const std::string& msg) {
  State& s = state();
  if (s.rank != 0) return;
  const std::string line = timestamp() + " " + msg + "\n";
  if (!s.tty) {
    emit(STDOUT_FILENO, line, true);
    return;
  }
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.file) {
    std::fputs(line.c_str(), s.file);
    std::fflush(s.file);
  }
}

void progress0(const std::string& line) {
  State& s = state();
  if (s.rank != 0 || !s.tty) return;
  std::lock_guard<std::mutex> lock(s.mu);
  to_console(s, STDOUT_FILENO, "\r" + line + "\x1b[K");
  s.bar_shown = true;
}

void warn(const std::string& msg) {
  // Drained up to this line: a crash that follows (not through error()) still shows it.
  flush_to(emit(STDERR_FILENO, timestamp() + " " + where() + " warning: " + msg + "\n", state().rank == 0), 1.0);
}

void warn0(const std::string& msg) {
  if (state().rank == 0) warn(msg);
}

void error(const std::string& msg) {
  // An abort may follow: a launcher that still reads gets the line (and what came before).
  flush_to(emit(STDERR_FILENO, timestamp() + " " + where() + " error: " + msg + "\n", state().rank == 0), 2.0);
}

}  // namespace lockstep::log
