// cmd_sweep: `lockstep sweep FILE [--count | --task I]` — the runs of a hyper-parameter sweep
// file (core/tools/sweep_plan.hpp), each checked against `lockstep train`'s options (with the
// options every run gets, after --), so a typo stops the submission, not N array tasks.
// Serial, no MPI.
//   lockstep sweep FILE            a table: index, run name, its options
//   lockstep sweep FILE --count    the number of runs (slurm/sweep.sh: --array=0-(N-1))
//   lockstep sweep FILE --task I   run I: its name on the first line, then one option
//                                  word per line (slurm/sweep.sbatch reads them)
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <map>

#include "app/commands.hpp"
#include "app/options.hpp"
#include "core/base/error.hpp"
#include "core/tools/sweep_plan.hpp"
#include "io/util/file_util.hpp"

namespace lockstep::app {
namespace {

// Run I's options as `lockstep train` parses them: COMMON (every run's, after slurm/sweep.sh's
// --) first, the run's own last (they win, as in sweep.sbatch); data.path stands in for the
// job's own where none is given. One option under two names in a run (lr= and train.lr=)
// is refused: which value it trained with was the parser's choice.
void check_task(const SweepTask& t, const std::vector<std::string>& common, const std::string& file, size_t i) {
  const std::string run = fmt::format("{}: run {} ({})", file, i, t.name);
  std::map<std::string, std::string> seen;  // option -> the key the file wrote
  const std::vector<std::string> own = expand_aliases(t.args());
  for (size_t k = 0; k < t.overrides.size(); ++k)
    if (const auto [it, fresh] = seen.emplace(own[2 * k], t.overrides[k].first); !fresh)
      throw UsageError(fmt::format("{}: {} and {} are one option ({})", run, it->second, t.overrides[k].first,
                                   own[2 * k]));
  // A run's directory, resume policy and job file are the sweep's (SWEEP_DIR/<run>, auto,
  // JOB_CONFIG), under any name, in the file or after --: run-dir= sent every run into one
  // directory, resume=never started each requeue afresh (a hostile finding).
  std::vector<std::string> named = own;
  for (const std::string& a : expand_aliases(common)) named.push_back(a.substr(0, a.find('=')));
  for (const std::string& a : named)
    if (a == "--run.dir" || a == "--run.resume" || a == "--config")
      throw UsageError(run + ": " + a + " is the sweep's own (each run trains in SWEEP_DIR/<its name>, resumes "
                       "auto, with JOB_CONFIG): not a sweep key nor an option after --");
  std::vector<std::string> args{"--data.path", "."};
  args.insert(args.end(), common.begin(), common.end());
  args.insert(args.end(), own.begin(), own.end());
  Config cfg;
  const ParseResult r = parse_train(args, &cfg);
  if (r.status == ParseStatus::kError) throw UsageError(run + ": " + r.message);
}

}  // namespace

int cmd_sweep(const Args& all) {
  // lockstep sweep FILE [...] [-- TRAIN OPTIONS]: options every run gets, checked with each.
  const auto dashes = std::find(all.begin(), all.end(), "--");
  const Args args(all.begin(), dashes);
  const std::vector<std::string> common(dashes == all.end() ? dashes : dashes + 1, all.end());
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args.size() > 3 ||
      (args.size() == 2 && args[1] != "--count") || (args.size() == 3 && args[1] != "--task")) {
    std::cout << "usage: lockstep sweep FILE [--count | --task I] [-- TRAIN OPTIONS]\n"
                 "  FILE: lines of KEY=VALUE[,VALUE...] (a line is every combination of its values;\n"
                 "  the sweep is every line's), e.g.  lr=0.05,0.1 batch-size=64,128\n"
                 "  a value with commas in double quotes: class-weights=\"1,2,1\",\"1,1,1\"\n"
                 "  -- TRAIN OPTIONS: every run's (slurm/sweep.sh's), checked with each run's own\n";
    const bool help = dashes == all.end() && (args.empty() || args[0] == "--help" || args[0] == "-h");
    return help ? kExitOk : kExitUsage;
  }
  const std::string& file = args[0];
  const std::vector<SweepTask> tasks = plan_sweep(io::read_text_file(file), file);
  if (args.size() == 2) {
    std::cout << tasks.size() << "\n";
    return kExitOk;
  }
  if (args.size() == 3) {
    size_t i = 0;
    try {
      size_t used = 0;
      i = std::stoul(args[2], &used);
      if (used != args[2].size() || args[2].find_first_not_of("0123456789") != std::string::npos)
        throw std::invalid_argument("");  // stoul reads "-1" as 2^64 - 1
    } catch (const std::exception&) {
      throw UsageError("lockstep sweep --task: '" + args[2] + "' is not a run index");
    }
    if (i >= tasks.size())
      throw UsageError(fmt::format("lockstep sweep --task {}: {} has runs 0-{}", i, file, tasks.size() - 1));
    check_task(tasks[i], common, file, i);
    std::cout << tasks[i].name << "\n";
    for (const auto& a : tasks[i].args()) std::cout << a << "\n";
    return kExitOk;
  }
  for (size_t i = 0; i < tasks.size(); ++i) check_task(tasks[i], common, file, i);
  std::cout << fmt::format("{} run(s) in {}:\n", tasks.size(), file);
  for (size_t i = 0; i < tasks.size(); ++i) {
    std::string opts;
    for (const auto& a : tasks[i].args()) opts += (opts.empty() ? "" : " ") + a;
    std::cout << fmt::format("{:4}  {}  {}\n", i, tasks[i].name, opts);
  }
  return kExitOk;
}

}  // namespace lockstep::app
