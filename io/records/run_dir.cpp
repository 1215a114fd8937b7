// run_dir: see run_dir.hpp.
#include "io/records/run_dir.hpp"
#include "core/base/env.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "core/base/error.hpp"

namespace lockstep::io {

std::string lock_holder_text() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  const char* job = env::get(env::kSlurmJobId);
  return "pid " + std::to_string(::getpid()) + " on host " + host +
         (job ? std::string(" (Slurm job ") + job + ")" : std::string()) + " since " + when;
}

RunDir::RunDir(const std::string& dir) : dir_(dir) {
  make_dirs(dir_);
  const std::string lock = dir_ + "/lock";
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0664);
  if (lock_fd_ < 0)
    throw Error("cannot open " + lock + ": " + std::strerror(errno) +
                (errno == ELOOP ? " (a symbolic link: lockstep does not follow links in a run directory)" : ""));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::string holder;
    char buf[512] = {0};
    const ssize_t n = ::pread(lock_fd_, buf, sizeof buf - 1, 0);
    if (n > 0) holder.assign(buf, static_cast<size_t>(n));
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
    ::close(lock_fd_);
    lock_fd_ = -1;
    if (err == EWOULDBLOCK)
      throw RunDirBusy("run directory " + dir_ + " is in use by another job (" +
                       (holder.empty() ? std::string("holder unknown") : holder) +
                       "): one run directory holds one job; wait for it, stop it, or choose another --run.dir");
    throw Error("cannot lock " + lock + ": " + std::strerror(err));
  }
  const std::string me = lock_holder_text() + "\n";
  if (::ftruncate(lock_fd_, 0) == 0) {
    try {
      write_all(lock_fd_, me, lock);  // pwrite-like: offset 0 after the truncate
    } catch (const Error&) {
      // the holder text is for messages only
    }
  }
  make_dirs(checkpoints());
  for (const std::string& d : {dir_, checkpoints()})
    for (const std::string& name : remove_temp_files(d)) removed_.push_back(d + "/" + name);
  LOCKSTEP_REQUIRE(file_identity(dir_, &id_) && file_identity(checkpoints(), &ckpt_id_),
                   "cannot stat run directory " + dir_);
}

RunDir::~RunDir() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // closing releases the flock
}

void RunDir::check() const {
  FileIdentity now;
  if (!file_identity(dir_, &now) || now != id_)
    throw Error("run directory " + dir_ + " was deleted, moved or replaced while this run was writing to it; "
                "stopping instead of recreating part of it (nothing more was written)");
  if (!file_identity(checkpoints(), &now) || now != ckpt_id_)
    throw Error("checkpoint directory " + checkpoints() + " was deleted, moved or replaced during the run; "
                "stopping instead of recreating it (nothing more was written)");
}

}  // namespace lockstep::io
