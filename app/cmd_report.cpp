// cmd_report: `lockstep report SWEEP_DIR` — writes SWEEP_DIR/report.md and
// SWEEP_DIR/scaling.svg (core/tools/scaling_report) and prints the report;
// `lockstep report --trace RUN_DIR` merges a run's per-rank traces (core/tools/trace_merge).
#include <iostream>

#include "app/commands.hpp"
#include "core/base/error.hpp"
#include "core/tools/scaling_report.hpp"
#include "core/tools/trace_merge.hpp"
#include "io/records/sweep_data.hpp"
#include "io/util/file_util.hpp"

namespace lockstep::app {

int cmd_report(const Args& args) {
  if (args.size() == 2 && args[0] == "--trace") {
    const TraceSummary t = merge_traces(args[1]);
    std::cout << t.table << "\nmerged " << t.ranks << " rank(s)"
              << (t.op_spans > 0 ? " and " + std::to_string(t.op_spans) + " operator spans (--trace.ops)" : std::string())
              << " into " << t.merged_path << " (open in chrome://tracing or ui.perfetto.dev)\n";
    return kExitOk;
  }
  if (args.size() != 1 || args[0] == "--help" || args[0] == "-h") {
    std::cout << "usage: lockstep report SWEEP_DIR\n  the table and plot (SWEEP_DIR/scaling.svg, report.md) of a sweep made "
                 "by slurm/scaling_sweep.sh\n       lockstep report --trace RUN_DIR\n  the ranks' traces of --trace.steps "
                 "merged into RUN_DIR/trace/merged.json, with a per-rank table\n";
    return args.size() == 1 ? kExitOk : kExitUsage;
  }
  const std::string& dir = args[0];
  const ScalingReport report = scaling_report(io::read_sweep(dir), dir);
  io::write_file_atomic(dir + "/scaling.svg", report.svg);
  io::write_file_atomic(dir + "/report.md", report.markdown);
  if (!report.model_json.empty()) io::write_file_atomic(dir + "/model.json", report.model_json);
  std::cout << report.markdown << "\nwrote " << dir << "/report.md, " << dir << "/scaling.svg" <<
      (report.model_json.empty() ? "" : " and " + dir + "/model.json") << "\n";
  return kExitOk;
}

}  // namespace lockstep::app
