// trace_merge: `lockstep report --trace RUN_DIR` — the ranks' traces of --trace.steps
// (RUN_DIR/trace/rank-R.json, step_trace.hpp) merged into one timeline,
// RUN_DIR/trace/merged.json (each rank a process, its phases, collectives and checkpoints
// as threads), and a table: per rank, the mean ms per traced step of each phase and the
// collectives' time, the slowest rank marked. Each rank's operator profile (--trace.ops:
// ops-rank-R.json, LibTorch's Kineto trace, op_profile.hpp) joins its process as more
// threads — host threads' operators, GPU streams' kernels — on the same unix-time axis
// (Kineto's timestamps plus its baseTimeNanoseconds). Only one job's files are merged: the
// newest file's job (its world, traced steps and first step, which each file records);
// files an earlier job left in trace/ (other steps, more ranks) are skipped and named.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lockstep {

struct TraceSummary {
  int ranks = 0;
  int64_t op_spans = 0;  // operator and kernel spans merged from ops-rank-R.json files
  std::string table;  // markdown
  std::string merged_path;
  std::string job;                   // which job's traces were merged
  std::vector<std::string> skipped;  // "rank-3.json (the job of 4 rank(s) ...)": files of other jobs
  std::string note;                  // "" or what is missing (a rank's trace)
};

// Throws Error naming the file when a trace is missing or unreadable.
TraceSummary merge_traces(const std::string& run_dir);

}  // namespace lockstep
