// sweep_plan: a hyper-parameter sweep file -> the runs it asks for (slurm/sweep.sbatch runs
// task I of them as element I of a Slurm job array; `lockstep sweep FILE` lists them).
//
// Format: lines of space-separated KEY=VALUE[,VALUE...] tokens; '#' starts a comment;
// blank lines are skipped. KEY is a `lockstep train` option without its dashes (lr,
// train.lr, batch-size, data.hflip). A line stands for every combination of its value
// lists (the first key varies slowest), and the sweep is the lines' combinations in order:
//   lr=0.05,0.1 batch-size=64,128      -> 4 runs (a grid)
//   model=cnn lr=0.1                   -> 1 run per line (a list)
// A value holding commas is quoted: class-weights="1,2,1","1,1,1" (2 runs).
// A run's name — its run directory under the sweep's root — is its KEY=VALUE pairs joined
// by ',' (lr=0.05,batch-size=64), with any character outside [A-Za-z0-9._+=-] as '_'.
// Pure: the same file gives the same tasks in the same order on every node and requeue.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace lockstep {

struct SweepTask {
  std::vector<std::pair<std::string, std::string>> overrides;  // in the line's key order
  std::string name;
  std::vector<std::string> args() const;  // --KEY VALUE ...
};

inline constexpr size_t kMaxSweepRuns = 10000;

// Throws UsageError naming FILE and the line for a token that is not KEY=VALUE, an empty
// key or value, an unclosed quote, a key given twice on a line, two runs with one name, more
// than kMaxSweepRuns runs, or no run at all.
std::vector<SweepTask> plan_sweep(const std::string& text, const std::string& file);

}  // namespace lockstep
