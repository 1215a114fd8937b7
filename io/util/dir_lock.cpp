// dir_lock: see dir_lock.hpp.
#include "io/util/dir_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "core/base/env.hpp"
#include "io/util/file_util.hpp"

namespace lockstep::io {
namespace {

std::string read_holder(int fd) {
  char buf[512] = {0};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string s = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

// A non-empty DIR without the mark, holding something the caller cannot adopt: refused.
void refuse_unmarked(const std::string& dir, const std::string& kind, const std::string& option,
                     const Adoptable& adoptable, const std::string& hint) {
  if (!is_directory(dir) || has_lock_mark(dir)) return;
  const std::vector<std::string> foreign = foreign_entries(dir, adoptable);
  if (foreign.empty()) return;
  throw DirRefused(dir + " is not empty and holds files that are not a lockstep " + kind + " (" + entries_text(foreign) +
                   ") and no lockstep lock file: lockstep does not adopt, overwrite or delete in a directory it "
                   "did not make (choose a new or empty " + option + hint + ")");
}

// DIR, held by another process (HOLDER: its lock file's text, "" unknown): refused.
DirRefused in_use(const std::string& dir, const std::string& kind, const std::string& option, const std::string& holder) {
  return DirRefused(kind + " directory " + dir + " is in use by another job (" +
                    (holder.empty() ? std::string("holder unknown") : holder) + "): one " + kind +
                    " directory holds one job; wait for it, stop it, or choose another " + option);
}

}  // namespace

std::vector<std::string> foreign_entries(const std::string& dir, const Adoptable& own) {
  std::vector<std::string> out;
  for (const std::string& f : list_dir(dir))
    if (f != kLockName && !own(f) && !parse_temp_name(f)) out.push_back(f);
  return out;
}

std::string entries_text(const std::vector<std::string>& names) {
  std::string text;
  for (size_t i = 0; i < names.size() && i < 3; ++i) text += (i ? ", " : "") + names[i];
  if (names.size() > 3) text += ", ... (" + std::to_string(names.size()) + " entries)";
  return text;
}

bool has_lock_mark(const std::string& dir) {
  struct stat st {};
  return ::lstat((dir + "/" + kLockName).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string lock_holder_text() {
  const Writer me = this_writer();
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  const char* job = env::get(env::kSlurmJobId);
  return "pid " + std::to_string(me.pid) + " on host " + me.host +
         (job ? std::string(" (Slurm job ") + job + ")" : std::string()) + " since " + when;
}

Writer parse_lock_holder(const std::string& text) {
  Writer w;
  if (text.rfind("pid ", 0) != 0) return w;
  const size_t end = text.find(" on host ");
  if (end == std::string::npos || end == 4 || text.find_first_not_of("0123456789", 4) != end || end - 4 > 10)
    return w;
  const size_t host = end + 9, host_end = text.find(' ', host);
  if (host >= text.size() || host_end == host) return w;
  w.pid = std::stol(text.substr(4, end - 4));
  w.host = text.substr(host, host_end == std::string::npos ? std::string::npos : host_end - host);
  return w;
}

DirLock::DirLock(const std::string& dir, const std::string& kind, const std::string& option,
                 const Adoptable& adoptable, const std::string& hint) {
  // "" + "/lock" is the file system's root: never a directory a job chose.
  if (dir.empty()) throw DirRefused(option + " is empty: name the " + kind + "'s directory");
  refuse_unmarked(dir, kind, option, adoptable, hint);
  make_dirs(dir);
  const std::string lock = dir + "/" + kLockName;
  fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0664);
  if (fd_ < 0)
    throw Error("cannot open " + lock + ": " + std::strerror(errno) +
                (errno == ELOOP ? " (a symbolic link: lockstep does not follow links in its directories)" : ""));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = read_holder(fd_);
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK) throw in_use(dir, kind, option, holder);
    throw Error("cannot lock " + lock + ": " + std::strerror(err));
  }
  previous_ = parse_lock_holder(read_holder(fd_));
  const std::string me = lock_holder_text() + "\n";
  if (::ftruncate(fd_, 0) == 0) {
    try {
      write_all(fd_, me, lock);  // pwrite-like: offset 0 after the truncate
    } catch (const Error&) {
      // the holder text is for messages and for previous(); the lock itself is held
    }
  }
}

void DirLock::probe(const std::string& dir, const std::string& kind, const std::string& option,
                    const Adoptable& adoptable, const std::string& hint) {
  if (dir.empty()) throw DirRefused(option + " is empty: name the " + kind + "'s directory");
  if (!is_directory(dir)) return;
  refuse_unmarked(dir, kind, option, adoptable, hint);
  const std::string lock = dir + "/" + kLockName;
  const int fd = ::open(lock.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;  // no lock file yet: the job makes it
  const bool busy = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;  // released by the close
  const std::string holder = busy ? read_holder(fd) : "";
  ::close(fd);
  if (busy) throw in_use(dir, kind, option, holder);
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace lockstep::io
