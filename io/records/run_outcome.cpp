// run_outcome: see run_outcome.hpp.
#include "io/records/run_outcome.hpp"

namespace lockstep::io {

const MetricsRow* standing_end(const std::vector<MetricsRow>& rows) {
  const MetricsRow* end = nullptr;
  for (const MetricsRow& row : rows) {
    if (end && (row.step > end->step || (row.kind == RowKind::kStart && row.to_step))) end = nullptr;
    if (row.kind == RowKind::kEnd) end = &row;
  }
  return end;
}

}  // namespace lockstep::io
