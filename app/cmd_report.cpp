// cmd_report: `lockstep report` —
//   RUN_DIR... | SWEEP_ROOT [--out DIR] [--metric NAME]...   runs compared: the table
//       printed, and DIR/report.md, curves.svg, report.html (core/tools/run_report); DIR
//       defaults to the one directory given when it is a sweep's root, else ./report
//   SWEEP_DIR (a scaling sweep: it holds sweep.txt)   SWEEP_DIR/report.md and scaling.svg
//       (core/tools/scaling_report)
//   --trace RUN_DIR   the ranks' traces merged (core/tools/trace_merge).
#include <algorithm>
#include <iostream>

#include "app/commands.hpp"
#include "app/launch_checks.hpp"
#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/tools/run_report.hpp"
#include "core/tools/scaling_report.hpp"
#include "core/tools/trace_merge.hpp"
#include "io/records/sweep_data.hpp"
#include "io/util/file_util.hpp"

namespace lockstep::app {
namespace {

const char* kReportUsage =
    "usage: lockstep report RUN_DIR... | SWEEP_ROOT [--out DIR] [--metric NAME]... [--force]\n"
    "  runs compared: a table (overrides, best validation and its step, test, time to best, samples/s,\n"
    "  how it ended) and curves of each --metric (default: train_loss and the best metric) as\n"
    "  DIR/curves.svg and DIR/report.html (DIR: the sweep root, else ./report); a file there that an\n"
    "  earlier report did not write is replaced only with --force\n"
    "       lockstep report SWEEP_DIR [--force]\n"
    "  the table and plot (SWEEP_DIR/scaling.svg, report.md) of a sweep made by slurm/scaling_sweep.sh\n"
    "       lockstep report --trace RUN_DIR\n"
    "  the ranks' traces of --trace.steps merged into RUN_DIR/trace/merged.json, with a per-rank table\n";

// Whether PATH (it exists) is what an earlier `lockstep report` wrote there, by the shape of its
// start: only those are replaced without --force (a report.md or report.html of the user's own
// in a sweep's root was replaced, a hostile finding).
bool report_wrote(const std::string& path) {
  std::string head = io::read_text_file(path);
  head.resize(std::min<size_t>(head.size(), 4096));
  const auto starts = [&](const std::string& s) { return head.rfind(s, 0) == 0; };
  const std::string name = io::base_name(path);
  if (name == "report.md") return starts("| run | overrides |") || starts("# Scaling sweep: ");
  if (name == "report.html") return head.find("<title>lockstep report</title>") != std::string::npos;
  if (name == "model.json") return head.find("\"calibrated_at_ranks\"") != std::string::npos;
  return starts("<svg xmlns='http://www.w3.org/2000/svg' width='");  // svg_plot's
}

// Refuses, before anything is written, an output that exists and is not an earlier report's.
void check_outputs(const std::vector<std::string>& paths, bool force, const std::string& or_else) {
  if (force) return;
  for (const std::string& p : paths) {
    if (!io::path_exists(p) && !io::is_symlink(p)) continue;
    bool ours = false;
    try {
      if (!io::is_symlink(p)) io::require_regular_file(p), ours = report_wrote(p);
    } catch (const Error&) {
    }
    if (!ours)
      throw UsageError("lockstep report: " + p + " exists and is not a report lockstep wrote: pass --force to "
                       "replace it" + or_else + " (nothing was written)");
  }
}

int scaling(const std::string& dir, bool force) {
  const io::Sweep sweep = io::read_sweep(dir);
  for (const auto& note : sweep.notes) log::warn(note);
  const ScalingReport report = scaling_report(sweep, dir);
  std::vector<std::string> outputs{dir + "/scaling.svg", dir + "/report.md"};
  if (!report.model_json.empty()) outputs.push_back(dir + "/model.json");
  check_outputs(outputs, force, "");
  std::vector<std::pair<std::string, std::string>> files{{dir + "/scaling.svg", report.svg},
                                                         {dir + "/report.md", report.markdown}};
  if (!report.model_json.empty()) files.emplace_back(dir + "/model.json", report.model_json);
  io::write_files_atomic(files);  // all or none: a full disk left some files new, some old
  std::cout << report.markdown << "\nwrote " << dir << "/report.md, " << dir << "/scaling.svg"
            << (report.model_json.empty() ? "" : " and " + dir + "/model.json") << "\n";
  return kExitOk;
}

}  // namespace

int cmd_report(const Args& args) {
  require_single_process("report");
  if (args.size() == 2 && args[0] == "--trace") {
    const TraceSummary t = merge_traces(args[1]);
    if (!t.skipped.empty()) {
      std::string files;
      for (const std::string& f : t.skipped) files += (files.empty() ? "" : ", ") + f;
      log::warn("merged the newest job's traces (" + t.job + "); skipped in " + args[1] + "/trace: " + files);
    }
    if (!t.note.empty()) log::warn(t.note);
    std::cout << t.table << "\nmerged " << t.ranks << " rank(s)"
              << (t.op_spans > 0 ? " and " + std::to_string(t.op_spans) + " operator spans (--trace.ops)" : std::string())
              << " into " << t.merged_path << " (open in chrome://tracing or ui.perfetto.dev)\n";
    return kExitOk;
  }
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kReportUsage;
    return args.empty() ? kExitUsage : kExitOk;
  }
  std::vector<std::string> dirs, metrics;
  std::string out;
  bool force = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--force") {
      force = true;
      continue;
    }
    if (args[i] == "--out" || args[i] == "--metric") {
      if (i + 1 == args.size()) throw UsageError("lockstep report: " + args[i] + " needs a value");
      (args[i] == "--out" ? out : metrics.emplace_back()) = args[i + 1];
      ++i;
    } else if (args[i].rfind("--", 0) == 0) {
      throw UsageError("lockstep report: unknown option " + args[i] + " (see lockstep report --help)");
    } else {
      dirs.push_back(args[i]);
    }
  }
  if (dirs.empty()) throw UsageError("lockstep report: no run directories given");
  if (dirs.size() == 1 && out.empty() && metrics.empty() && io::path_exists(dirs[0] + "/sweep.txt"))
    return scaling(dirs[0], force);
  if (out.empty()) out = dirs.size() == 1 && !io::path_exists(dirs[0] + "/metrics.jsonl") ? dirs[0] : "report";
  const RunsReport r = compare_runs(find_runs(dirs), metrics);
  for (const auto& note : r.notes) log::warn(note);
  check_outputs({out + "/report.md", out + "/curves.svg", out + "/report.html"}, force, ", or --out another folder");
  io::make_dirs(out);
  io::write_files_atomic({{out + "/report.md", r.table}, {out + "/curves.svg", r.svg}, {out + "/report.html", r.html}});
  std::cout << r.table << "\nwrote " << out << "/report.md, " << out << "/curves.svg and " << out
            << "/report.html (curves of";
  for (const auto& m : r.metrics) std::cout << " " << m;
  std::cout << ")\n";
  return kExitOk;
}

}  // namespace lockstep::app
