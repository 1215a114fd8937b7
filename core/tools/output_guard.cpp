// output_guard: see output_guard.hpp.
#include "core/tools/output_guard.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/base/error.hpp"
#include "io/dataset/shard_format.hpp"
#include "io/records/run_dir.hpp"
#include "io/util/file_util.hpp"
#include "io/util/temp_files.hpp"

namespace lockstep {
namespace {

// OUT with its folder resolved (links, "..", "//"): the file a write would replace.
std::string resolved(const std::string& out) {
  const std::string dir = io::parent_dir(out), name = io::base_name(out);
  return io::canonical_path(dir.empty() ? "." : dir) + "/" + name;
}

bool same_file(const std::string& a, const std::string& b) {
  io::FileIdentity x, y;
  if (io::file_identity(a, &x) && io::file_identity(b, &y)) return x == y;
  return resolved(a) == resolved(b);
}

// What of a dataset's own files OUT (resolved) is, or "".
std::string dataset_file(const std::string& dir, const std::string& name) {
  if (!io::path_exists(dir + "/" + io::kManifestName)) return "";
  if (name == io::kManifestName) return "the manifest of dataset " + dir;
  try {
    const io::Manifest m = io::read_manifest(dir);
    for (const auto& [split, entry] : m.splits)
      for (const auto& shard : entry.shards)
        if (shard.file == name) return "shard " + name + " of dataset " + dir + " (split '" + split + "')";
  } catch (const Error&) {
    // not readable as a dataset: the shard names below are still its
  }
  // A shard-named file, listed or not: "SPLIT-NNNNN-of-NNNNN.h5".
  if (name.rfind("-of-") != std::string::npos && name.size() > 3 && name.compare(name.size() - 3, 3, ".h5") == 0)
    return "a shard of dataset " + dir;
  return "";
}

// What of a run directory's own files OUT's folder DIR and NAME are, or "".
std::string run_file(const std::string& dir, const std::string& name) {
  const auto& own = io::kRunFiles;
  if (io::is_run_dir(dir) && std::find(own.begin(), own.end(), name) != own.end()) return name + " of run " + dir;
  // Inside a run's own subfolders (checkpoints, TensorBoard events, traces, flight records).
  for (std::string at = dir; at.size() > 1;) {
    const std::string parent = io::parent_dir(at), sub = io::base_name(at);
    const auto& folders = io::kRunFolders;
    if (std::find(folders.begin(), folders.end(), sub) != folders.end() && io::is_run_dir(parent))
      return "the " + sub + "/ folder of run " + parent;
    if (parent == at) break;
    at = parent;
  }
  return "";
}

}  // namespace

void check_output(const std::string& option, const std::string& out, const std::vector<std::string>& reads,
                  bool replace) {
  const auto refuse = [&](const std::string& what) {
    throw UsageError(option + " " + out + " is " + what + ": writing it would destroy it (nothing was written; "
                     "choose another path)");
  };
  if (io::is_directory(out)) refuse("a directory");
  for (const std::string& in : reads)
    if (!in.empty() && same_file(out, in)) refuse("the same file as " + in + ", which this command reads");
  const std::string path = resolved(out);
  const std::string dir = io::parent_dir(path), name = io::base_name(path);
  if (const std::string what = dataset_file(dir, name); !what.empty()) refuse(what);
  if (const std::string what = run_file(dir, name); !what.empty()) refuse(what);
  if (!io::is_directory(io::parent_dir(out)))
    throw UsageError(option + " " + out + " is in a folder that does not exist (" + io::parent_dir(out) +
                     "; nothing was written)");
  // A name over the file system's limit failed after the work otherwise.
  if (const size_t n = io::base_name(out).size(), max = io::name_max(io::parent_dir(out)); n > max)
    throw UsageError(fmt::format("{} {} is a file name of {} bytes, over the {} its file system takes (nothing "
                                 "was written; choose a shorter name)",
                                 option, out, n, max));
  if (!replace && (io::path_exists(out) || io::is_symlink(out)))
    throw UsageError(option + " " + out + " is an existing file: pass --force to replace it (nothing was written)");
  // What a writer of this output killed mid-write left (OUT.lockstep-tmp.PID.HOST: a SIGTERM
  // during predict's write): removed by temp_files' rule, only where that writer is gone.
  io::remove_dead_temps(io::parent_dir(out), {}, io::base_name(out));
}

}  // namespace lockstep
