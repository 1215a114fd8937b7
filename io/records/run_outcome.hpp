// run_outcome: whether a run's rows (metrics.jsonl) end finished — one rule for `lockstep
// report` (run comparison) and the scaling report, which had two.
#pragma once

#include <vector>

#include "io/records/metrics_row.hpp"

namespace lockstep::io {

// The end row that stands: the last end row that no later work followed (a row past its
// step: the run was extended, then killed; or the start row of a job with work to do, which
// says the step it trains to: killed before its first row). nullptr when none (running, or
// killed). A start row without to_step (an older lockstep's re-run with nothing to do)
// changes nothing.
const MetricsRow* standing_end(const std::vector<MetricsRow>& rows);

}  // namespace lockstep::io
