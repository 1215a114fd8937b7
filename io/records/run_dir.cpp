// run_dir: see run_dir.hpp.
#include "io/records/run_dir.hpp"

#include "core/base/error.hpp"

namespace lockstep::io {

namespace {

// A dataset directory carries the same lock mark; its manifest (io/dataset's
// kManifestName, which io/records does not see) tells it apart.
constexpr const char* kDatasetManifest = "manifest.json";

std::unique_ptr<DirLock> lock_run_dir(const std::string& dir) {
  if (path_exists(dir + "/" + kDatasetManifest))
    throw DirRefused("--run.dir " + dir + " is a dataset directory (it holds " + kDatasetManifest +
                     "): a run writes its own directory; choose another --run.dir");
  return std::make_unique<DirLock>(dir, "run", "--run.dir",
                                   [](const std::string& name) { return name == "doctor.json"; });
}

}  // namespace

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
