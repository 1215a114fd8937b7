// dir_lock: one job writes a lockstep directory (a run directory, a dataset being
// imported) at a time, and a directory that is not lockstep's is refused, not adopted.
//
// DirLock(dir, kind) takes an exclusive flock(2) on DIR/lock (created 0664, never through
// a link) and writes its holder there ("pid 123 on host n1 (Slurm job 456) since ...").
// 1. Another live holder: DirRefused naming it. The kernel releases the lock when the
//    holder dies, so a killed job never leaves it stuck. (On NFS flock is emulated with
//    POSIX locks, which the server releases when the client dies.)
// 2. The lock file is lockstep's mark on the directory. A directory that exists, holds
//    anything, and has no lock file was not made by lockstep (or by an older version that
//    did not mark it): DirRefused, before anything in it is touched — unless every entry
//    is one the caller names as its own (ADOPTABLE: e.g. a dataset's manifest and shards
//    from before datasets were marked, or the doctor's doctor.json that a
//    Slurm template writes into a run directory before training).
// 3. previous(): the holder recorded in the lock file before us. We hold the lock now, so
//    that process is gone: its temp files may be removed (temp_files.hpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "io/util/temp_files.hpp"

namespace lockstep::io {

// A directory held by another job, or not lockstep's: the user chooses another path.
class DirRefused : public UsageError {
 public:
  explicit DirRefused(const std::string& what) : UsageError(what) {}
};

inline constexpr const char* kLockName = "lock";
// Whether a file name in an unmarked directory is one the caller may adopt.
using Adoptable = std::function<bool(const std::string& name)>;

class DirLock {
 public:
  // KIND names the directory in messages ("run", "dataset"); OPTION is the option that
  // chose it ("--run.dir"); HINT adds a remedy to the unmarked-directory refusal
  // (", or pass --force"). Creates DIR (mkdir -p) when missing.
  DirLock(const std::string& dir, const std::string& kind, const std::string& option, const Adoptable& adoptable,
          const std::string& hint = "");
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

  const Writer& previous() const { return previous_; }

  // What the constructor would refuse (DirRefused), changing nothing: no directory or lock
  // file made, the holder line not rewritten (`lockstep doctor` before a job). A missing DIR
  // passes.
  static void probe(const std::string& dir, const std::string& kind, const std::string& option,
                    const Adoptable& adoptable, const std::string& hint = "");

 private:
  int fd_ = -1;
  Writer previous_;
};

// DIR's entries that are neither OWN, nor DIR's lock file, nor lockstep's marked temp
// files: what a directory holds that lockstep did not make.
std::vector<std::string> foreign_entries(const std::string& dir, const Adoptable& own);
// Up to three of NAMES for a message: "a, b, c, ... (7 entries)".
std::string entries_text(const std::vector<std::string>& names);

// Whether DIR carries lockstep's mark (a regular file DIR/lock).
bool has_lock_mark(const std::string& dir);
// "pid 123 on host n1 (Slurm job 456) since 2026-11-22T12:00:00Z": who holds a lock.
std::string lock_holder_text();
// The writer a holder text names (pid 0 when it names none).
Writer parse_lock_holder(const std::string& text);

}  // namespace lockstep::io
