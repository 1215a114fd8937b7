// run_dir: see run_dir.hpp.
#include "io/records/run_dir.hpp"

#include <algorithm>

#include "core/base/error.hpp"
#include "io/records/checkpoint_store.hpp"

namespace lockstep::io {

namespace {

// A dataset directory carries the same lock mark; its manifest (io/dataset's
// kManifestName, which io/records does not see) tells it apart.
constexpr const char* kDatasetManifest = "manifest.json";

bool doctor_file(const std::string& name) { return name == "doctor.json"; }

// What RunDir refuses before its lock (a dataset, a run whose lock file was deleted).
void refuse_run_dir(const std::string& dir) {
  if (path_exists(dir + "/" + kDatasetManifest))
    throw DirRefused("--run.dir " + dir + " is a dataset directory (it holds " + kDatasetManifest +
                     "): a run writes its own directory; choose another --run.dir");
  // A run's own files without the lock mark: the lock file deleted (the "stale lock" reflex;
  // lockstep leaves none: a job holds it with flock while it runs). Said so, not "files that
  // are not a lockstep run" (a hostile finding); still not adopted, since another tool's
  // config.ini and train.log would be overwritten.
  if (is_directory(dir) && !has_lock_mark(dir)) {
    const std::vector<std::string> found = foreign_entries(dir, doctor_file);
    const auto ours = [](const std::string& name) {
      for (const char* f : kRunFiles)
        if (name == f) return true;
      for (const char* f : kRunFolders)
        if (name == f) return true;
      return false;
    };
    // Names alone could be another tool's (config.ini, train.log): lockstep's checkpoints too.
    if (!found.empty() && std::all_of(found.begin(), found.end(), ours) && !list_checkpoints(dir + "/checkpoints").empty())
      throw DirRefused("--run.dir " + dir + " holds a lockstep run's files (" + entries_text(found) + ") but no " +
                       kLockName + " file, lockstep's mark on its directories: was it deleted? No job leaves a stale "
                       "one (a running job holds it with flock). If no job runs in " + dir + ", recreate it (touch " +
                       dir + "/" + kLockName + ") and start again");
  }
}

std::unique_ptr<DirLock> lock_run_dir(const std::string& dir) {
  refuse_run_dir(dir);
  return std::make_unique<DirLock>(dir, "run", "--run.dir", doctor_file);
}

}  // namespace

void probe_run_dir(const std::string& dir) {
  refuse_run_dir(dir);
  DirLock::probe(dir, "run", "--run.dir", doctor_file);
}

bool is_run_dir(const std::string& dir) {
  return has_lock_mark(dir) && !path_exists(dir + "/" + kDatasetManifest);
}

RunDir::RunDir(const std::string& dir) : dir_(dir), lock_(lock_run_dir(dir)) {
  make_dirs(checkpoints());
  for (const std::string& d : {dir_, checkpoints()}) {
    const TempSweep sweep = remove_dead_temps(d, lock_->previous());
    for (const std::string& name : sweep.removed) removed_.push_back(d + "/" + name);
    for (const std::string& name : sweep.kept) kept_.push_back(d + "/" + name);
  }
  LOCKSTEP_REQUIRE(file_identity(dir_, &id_) && file_identity(checkpoints(), &ckpt_id_),
                   "cannot stat run directory " + dir_);
}

RunDir::~RunDir() = default;

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
