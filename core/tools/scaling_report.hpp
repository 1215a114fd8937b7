// scaling_report: `lockstep report SWEEP_DIR` — the table and plot of a scaling sweep
// (slurm/scaling_sweep.sh, read by io/records/sweep_data), with the ring all-reduce
// model's prediction to 1024 ranks (scaling_model.hpp), calibrated at the sweep's largest
// run that timed an all-reduce.
#pragma once

#include <string>

#include "io/records/sweep_data.hpp"

namespace lockstep {

struct ScalingReport {
  std::string markdown;  // report.md: the measured table, the model's table and verdict
  std::string svg;       // scaling.svg: throughput and efficiency against ranks
  std::string model_json;  // model.json: the calibrated model's terms (empty: no model), for tools
};

// Throws UsageError when the sweep has no 1-rank run (the baseline). DIR names it.
ScalingReport scaling_report(const io::Sweep& sweep, const std::string& dir);

}  // namespace lockstep
