// log: see log.hpp.
#include "core/base/log.hpp"
#include "core/base/env.hpp"

#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <ctime>
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

void emit(std::FILE* stream, const std::string& line, bool to_file) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.bar_shown) {
    std::fputs("\r\x1b[K", stdout);
    std::fflush(stdout);
    s.bar_shown = false;
  }
  std::fputs(line.c_str(), stream);
  std::fflush(stream);
  if (to_file && s.file) {
    std::fputs(line.c_str(), s.file);
    std::fflush(s.file);
  }
}

}  // namespace

void set_identity(int rank, int world, const std::string& host) {
  State& s = state();
  s.rank = rank;
  s.world = world;
  s.host = host;
}

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
  emit(stdout, timestamp() + " " + msg + "\n", true);
}

bool interactive() { return state().tty; }

void force_progress_bar(bool bar) { state().tty = bar; }

void step0(const std::string& msg) {
  State& s = state();
  if (s.rank != 0) return;
  const std::string line = timestamp() + " " + msg + "\n";
  if (!s.tty) return emit(stdout, line, true);
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
  std::fputs(("\r" + line + "\x1b[K").c_str(), stdout);
  std::fflush(stdout);
  s.bar_shown = true;
}

void warn(const std::string& msg) {
  emit(stderr, timestamp() + " " + where() + " warning: " + msg + "\n", state().rank == 0);
}

void error(const std::string& msg) {
  emit(stderr, timestamp() + " " + where() + " error: " + msg + "\n", state().rank == 0);
}

}  // namespace lockstep::log
