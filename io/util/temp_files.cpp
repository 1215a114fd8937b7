// temp_files: see temp_files.hpp.
#include "io/util/temp_files.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/base/error.hpp"
#include "io/util/file_util.hpp"

namespace lockstep::io {
namespace {

constexpr const char* kMark = ".lockstep-tmp.";

std::string host_name() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  return host[0] ? host : "localhost";
}

bool writer_gone(const Writer& w, const Writer& released) {
  if (released.pid > 0 && w == released) return true;
  if (w.host != host_name()) return false;  // another host's process: cannot tell, keep it
  if (w.pid == static_cast<long>(::getpid())) return true;  // ours, from before this process wrote
  return ::kill(static_cast<pid_t>(w.pid), 0) != 0 && errno == ESRCH;
}

}  // namespace

Writer this_writer() { return Writer{static_cast<long>(::getpid()), host_name()}; }

std::string temp_name_for(const std::string& path) {
  const Writer me = this_writer();
  return path + kMark + std::to_string(me.pid) + "." + me.host;
}

bool parse_temp_name(const std::string& name, Writer* who, std::string* target) {
  const size_t at = name.rfind(kMark);
  if (at == std::string::npos || at == 0) return false;
  const size_t digits = at + std::char_traits<char>::length(kMark);
  const size_t dot = name.find('.', digits);
  if (dot == std::string::npos || dot == digits || dot - digits > 10 || dot + 1 >= name.size()) return false;
  if (name.find_first_not_of("0123456789", digits) != dot) return false;
  const long pid = std::stol(name.substr(digits, dot - digits));
  if (pid <= 0) return false;
  if (who) *who = Writer{pid, name.substr(dot + 1)};
  if (target) *target = name.substr(0, at);
  return true;
}

TempSweep remove_dead_temps(const std::string& dir, const Writer& released, const std::string& target) {
  TempSweep out;
  if (!is_directory(dir)) return out;
  for (const std::string& name : list_dir(dir)) {
    Writer w;
    std::string of;
    if (!parse_temp_name(name, &w, &of) || (!target.empty() && of != target)) continue;
    if (!writer_gone(w, released)) {
      out.kept.push_back(name);
      continue;
    }
    if (::unlink((dir + "/" + name).c_str()) == 0) out.removed.push_back(name);
  }
  return out;
}

void close_synced(std::FILE*& f, const std::string& tmp) {
  std::FILE* file = f;
  f = nullptr;
  const bool ok = std::fflush(file) == 0 && ::fsync(fileno(file)) == 0;
  if (std::fclose(file) != 0 || !ok) throw Error("cannot write " + tmp + ": " + std::strerror(errno));
}

void commit_temp(const std::string& tmp, const std::string& path) {
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw Error("cannot rename " + tmp + " to " + path + ": " + why);
  }
  fsync_path(parent_dir(path));
}

}  // namespace lockstep::io
