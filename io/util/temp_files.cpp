// temp_files: see temp_files.hpp.
#include "io/util/temp_files.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/base/error.hpp"
#include "core/base/hash.hpp"
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

size_t name_max(const std::string& dir) {
  const long n = ::pathconf(dir.empty() ? "." : dir.c_str(), _PC_NAME_MAX);
  return n > 0 ? static_cast<size_t>(n) : 255;
}

std::string temp_stem(const std::string& name, size_t name_max) {
  // The longest mark a writer adds: the mark, a 10-digit PID, '.', a 64-byte host name
  // (HOST_NAME_MAX). A name that leaves less than that under NAME_MAX keeps its first bytes
  // (whole UTF-8 characters) and a hash of the whole: an output named up to NAME_MAX was
  // refused only after the work, naming its temporary file ("File name too long"; a hostile
  // finding).
  constexpr size_t kMarkMax = 14 + 10 + 1 + 64, kHash = 17;
  const size_t keep = std::max(name_max, kMarkMax + kHash + 8) - kMarkMax;
  if (name.size() <= keep) return name;
  size_t cut = keep - kHash;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return name.substr(0, cut) + fmt::format("~{:016x}", fnv1a64(name));
}

std::string temp_name_for(const std::string& path) {
  const Writer me = this_writer();
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const size_t at = slash == std::string::npos ? 0 : slash + 1;
  return path.substr(0, at) + temp_stem(path.substr(at), name_max(dir)) + kMark + std::to_string(me.pid) + "." + me.host;
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
  const std::string stem = target.empty() ? "" : temp_stem(target, name_max(dir));  // what its temp files carry
  for (const std::string& name : list_dir(dir)) {
    Writer w;
    std::string of;
    if (!parse_temp_name(name, &w, &of) || (!target.empty() && of != stem)) continue;
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
