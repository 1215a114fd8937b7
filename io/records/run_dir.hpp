// run_dir: rank 0's hold on a run directory — one directory, one job, never a directory
// lockstep did not make, and never a half-recreated one.
//
// 1. open() takes the directory's DirLock (io/util/dir_lock.hpp): a second job on the
//    same directory is refused naming the holder; so is a non-empty directory without
//    lockstep's lock file (a user's project folder is not adopted: its config.ini,
//    metrics.jsonl and *.tmp.* files are never replaced or removed). A directory holding
//    only doctor.json (the doctor's report, written there first by the Slurm templates)
//    is adopted.
// 2. With the lock held, leftover temp files of a killed writer are removed: only marked
//    ones whose writer is gone (io/util/temp_files.hpp); others are listed, kept.
// 3. The directory's identity (device, inode) is recorded; check() — before every
//    checkpoint and metrics row — fails when DIR was deleted, renamed or replaced while
//    the run was writing to it, instead of silently recreating part of it.
// Files are never written through a symbolic link planted in DIR (file_util's
// O_NOFOLLOW/O_EXCL rules); DIR itself and DIR/checkpoints may be links (a site's scratch).
//
// The run's own files and folders are named here once (kRunFiles, kRunFolders): the
// recorder writes them, and output_guard refuses any other command writing over them.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "io/util/dir_lock.hpp"
#include "io/util/file_util.hpp"

namespace lockstep::io {

inline constexpr std::array<const char*, 6> kRunFiles = {"lock", "resumable", "config.ini", "command.txt",
                                                        "train.log", "metrics.jsonl"};
inline constexpr std::array<const char*, 4> kRunFolders = {"checkpoints", "tb", "trace", "flight"};

// Whether DIR is a run directory of lockstep's (it carries the lock mark).
bool is_run_dir(const std::string& dir);
// What RunDir(DIR) would refuse (DirRefused: another live job holds it, it is not lockstep's,
// its lock file was deleted), changing nothing (no lock file made or rewritten: the next job
// reads the previous holder from it): `lockstep doctor`.
void probe_run_dir(const std::string& dir);

class RunDir {
 public:
  // Throws DirRefused when another live process holds DIR or DIR is not lockstep's,
  // Error on I/O problems.
  explicit RunDir(const std::string& dir);
  ~RunDir();
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;

  const std::string& path() const { return dir_; }
  std::string checkpoints() const { return dir_ + "/checkpoints"; }
  // Temp files of a killed writer that open() removed, and marked ones it kept because
  // their writer may still run (for the log).
  const std::vector<std::string>& removed_temps() const { return removed_; }
  const std::vector<std::string>& kept_temps() const { return kept_; }
  // Throws Error when DIR or DIR/checkpoints is gone or was replaced since open().
  void check() const;

 private:
  std::string dir_;
  std::unique_ptr<DirLock> lock_;
  FileIdentity id_, ckpt_id_;
  std::vector<std::string> removed_, kept_;
};

}  // namespace lockstep::io
