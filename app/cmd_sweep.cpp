// cmd_sweep: `lockstep sweep FILE [--count | --task I]` — the runs of a hyper-parameter sweep
// file (core/tools/sweep_plan.hpp), each checked against `lockstep train`'s options, so a
// typo stops the submission, not N array tasks. Serial, no MPI.
//   lockstep sweep FILE            a table: index, run name, its options
//   lockstep sweep FILE --count    the number of runs (slurm/sweep.sh: --array=0-(N-1))
//   lockstep sweep FILE --task I   run I: its name on the first line, then one option
//                                  word per line (slurm/sweep.sbatch reads them)
#include <fmt/format.h>

#include <iostream>

#include "app/commands.hpp"
#include "app/options.hpp"
#include "core/base/error.hpp"
#include "core/tools/sweep_plan.hpp"
#include "io/util/file_util.hpp"

namespace lockstep::app {
namespace {

// Run I's options as `lockstep train` parses them (data.path stands in for the job's own).
void check_task(const SweepTask& t, const std::string& file, size_t i) {
  std::vector<std::string> args = t.args();
  args.insert(args.end(), {"--data.path", "."});
  Config cfg;
  const ParseResult r = parse_train(args, &cfg);
  if (r.status == ParseStatus::kError)
    throw UsageError(fmt::format("{}: run {} ({}): {}", file, i, t.name, r.message));
}

}  // namespace

int cmd_sweep(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args.size() > 3 ||
      (args.size() == 2 && args[1] != "--count") || (args.size() == 3 && args[1] != "--task")) {
    std::cout << "usage: lockstep sweep FILE [--count | --task I]\n"
                 "  FILE: lines of KEY=VALUE[,VALUE...] (a line is every combination of its values;\n"
                 "  the sweep is every line's), e.g.  lr=0.05,0.1 batch-size=64,128\n";
    return args.empty() || args[0] == "--help" || args[0] == "-h" ? kExitOk : kExitUsage;
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
    check_task(tasks[i], file, i);
    std::cout << tasks[i].name << "\n";
    for (const auto& a : tasks[i].args()) std::cout << a << "\n";
    return kExitOk;
  }
  for (size_t i = 0; i < tasks.size(); ++i) check_task(tasks[i], file, i);
  std::cout << fmt::format("{} run(s) in {}:\n", tasks.size(), file);
  for (size_t i = 0; i < tasks.size(); ++i) {
    std::string opts;
    for (const auto& a : tasks[i].args()) opts += (opts.empty() ? "" : " ") + a;
    std::cout << fmt::format("{:4}  {}  {}\n", i, tasks[i].name, opts);
  }
  return kExitOk;
}

}  // namespace lockstep::app
