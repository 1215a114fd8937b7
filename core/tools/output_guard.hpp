// output_guard: no command writes over what it reads, or over a dataset's or a run's own
// files, however the path is spelled (symbolic links, "..", "//", a hard link). Every
// command that writes a file it is told (evaluate --eval.out, predict --out, export --out,
// doctor --doctor.out) asks first, on every rank, before it reads anything; OUT is refused
// when:
// 1. it is an existing directory, or its folder does not exist (refused before the work, not
//    after it); an existing file is refused unless the command was given --force (REPLACE);
// 2. it is a file the command reads: the same path once links and ".." are resolved, or
//    the same file (device and inode: a hard link);
// 3. its folder is a dataset (it holds manifest.json) and OUT is the manifest, one of the
//    shards the manifest lists, or a shard-named file;
// 4. its folder is a run directory of lockstep's (it carries the `lock` mark a run takes:
//    io/records/run_dir.hpp) and OUT is one of the run's own files, or it lies under one
//    of that run's own folders (checkpoints/, tb/, trace/, flight/).
// (`lockstep shard` has its own, stricter rules for its output directory: importer.hpp.)
#pragma once

#include <string>
#include <vector>

namespace lockstep {

// Throws UsageError naming OPTION, OUT and what writing it would destroy. READS: the files the
// command reads (its --config file among them).
void check_output(const std::string& option, const std::string& out, const std::vector<std::string>& reads,
                  bool replace);

}  // namespace lockstep
