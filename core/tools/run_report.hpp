// run_report: `lockstep report RUN_DIR... | SWEEP_ROOT` — training runs compared, from what
// each left in its directory (metrics.jsonl in metrics_row's schema, config.ini):
//   - one table (markdown): the run, its overrides (the config keys whose values differ
//     between the runs compared, run.dir aside), the best validation score by the run's
//     --ckpt.best-metric and its step, the test scores, the time its jobs trained until
//     that best score (each job from its start; not the queue between jobs), samples/s,
//     and how it ended (completed, stopped early and why, resumable after a signal, or
//     still running / killed);
//   - learning curves of any metric of the rows (train_loss, val_acc, lr, ...): one SVG
//     with a chart per metric, and a self-contained HTML page (no network: the data and
//     the script are in it) with the table and the curves, each run shown or hidden by its
//     checkbox; "#hide=RUN,RUN" in its address hides runs from the start.
// A sweep's root (slurm/sweep.sh) is a directory of run directories.
#pragma once

#include <string>
#include <vector>

namespace lockstep {

struct RunsReport {
  std::string table;  // markdown
  std::string svg;
  std::string html;
  std::vector<std::string> metrics;  // the curves drawn
  // Lines of the runs' metrics.jsonl that are no row (a note typed in), left out: one each,
  // "runs/a/metrics.jsonl: line 3: 'my note' is no row lockstep writes: left out".
  std::vector<std::string> notes;
};

// The run directories ARGS name: each one a run directory (it has metrics.jsonl) or a
// directory whose subdirectories are (sorted). Throws UsageError naming an argument that
// is neither.
std::vector<std::string> find_runs(const std::vector<std::string>& args);

// METRICS: row fields to draw (train_loss, val_acc, ...); empty: train_loss and the best
// metric of each run. Throws naming a directory whose files cannot be read.
RunsReport compare_runs(const std::vector<std::string>& run_dirs, const std::vector<std::string>& metrics);

}  // namespace lockstep
