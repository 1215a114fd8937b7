// sweep_data: the measurements of a scaling sweep directory (slurm/scaling_sweep.sh):
// SWEEP_DIR/ranks-N/ holds each run's metrics.jsonl and doctor.json; SWEEP_DIR/sweep.txt
// says the mode (weak | strong).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::io {

struct SweepRun {
  int ranks = 0;
  int64_t global_batch = 0;
  int64_t params = 0;
  double wire_bytes = 0;  // gradient bytes all-reduced per step (0 in older runs: 4 x params)
  int buckets = 1;        // all-reduces per step
  double samples_per_s = 0;  // median of the train rows after the first
  double step_seconds = 0;   // global_batch / samples_per_s
  double exposed_share = 0;  // exposed communication / step time over those rows
  // doctor.json (0 when absent)
  int hosts = 0;
  double small_bytes = 0, small_seconds = 0, big_bytes = 0, big_seconds = 0;
};

struct Sweep {
  std::string mode = "weak";
  std::vector<SweepRun> runs;  // by ranks
  // Lines of the runs' metrics.jsonl that are no row (a note typed in), left out: one each,
  // "DIR/ranks-2/metrics.jsonl: line 3: 'my note' is no row lockstep writes: left out".
  std::vector<std::string> notes;
};

// Throws Error naming the directory or file when a run is incomplete (no end row).
Sweep read_sweep(const std::string& dir);

}  // namespace lockstep::io
