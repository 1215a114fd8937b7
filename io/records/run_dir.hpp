// run_dir: rank 0's hold on a run directory — one directory, one job, and never a
// half-recreated one.
//
// 1. open() creates DIR (and DIR/checkpoints) if needed and takes an exclusive flock(2)
//    on DIR/lock. A second job on the same directory is refused, naming the holder (pid,
//    host, Slurm job, start time, written into the lock file). The kernel releases the
//    lock when the holder dies, so a crashed or killed job never leaves it stuck. (On NFS
//    flock is emulated with POSIX locks, which the server releases when the client dies.)
// 2. With the lock held nothing else writes here: leftover NAME.tmp.PID files of a
//    killed writer are removed.
// 3. The directory's identity (device, inode) is recorded; check() — before every
//    checkpoint and metrics row — fails when DIR was deleted, renamed or replaced while
//    the run was writing to it, instead of silently recreating part of it.
// Files are never written through a symbolic link planted in DIR (file_util's
// O_NOFOLLOW/O_EXCL rules); DIR itself and DIR/checkpoints may be links (a site's scratch).
#pragma once

#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "io/util/file_util.hpp"

namespace lockstep::io {

class RunDirBusy : public Error {
 public:
  explicit RunDirBusy(const std::string& what) : Error(what) {}
};

class RunDir {
 public:
  // Throws RunDirBusy when another live process holds DIR, Error on I/O problems.
  explicit RunDir(const std::string& dir);
  ~RunDir();
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;

  const std::string& path() const { return dir_; }
  std::string checkpoints() const { return dir_ + "/checkpoints"; }
  // Temp files of a killed writer that open() removed (for the log).
  const std::vector<std::string>& removed_temps() const { return removed_; }
  // Throws Error when DIR or DIR/checkpoints is gone or was replaced since open().
  void check() const;

 private:
  std::string dir_;
  int lock_fd_ = -1;
  FileIdentity id_, ckpt_id_;
  std::vector<std::string> removed_;
};

// "pid 123 on host n1 (Slurm job 456) since 2026-11-22T12:00:00Z": who holds a lock.
std::string lock_holder_text();

}  // namespace lockstep::io
