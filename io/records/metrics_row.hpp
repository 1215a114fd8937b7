// metrics_row: the one schema of a run's metrics — a typed row, written by the trainer and
// rendered by metrics.jsonl (to_json), TensorBoard (scalars) and read back by the tools
// that compare runs (from_json). No other file spells a row's keys.
//
// 1. Every row has a kind (start, train, eval, epoch, test, end), the 1-based epoch and
//    the global step. The other fields are optional: a field the trainer did not set is
//    not written (and reads back unset).
// 2. Numbers that are not finite (a NaN training loss) are written as null, and read back
//    as NaN: JSON has no NaN, and null says "not measured".
// 3. The per-rank step-time spread (train rows at more than one rank) is
//    "<phase>_ms_{min,median,max}" for the phases of kRankPhaseNames.
// 4. GPU gauges are per-rank arrays: "gpu_util_pct": [98, 97], TensorBoard
//    "gpu/util_pct/rank_<r>".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/clock.hpp"
#include "io/util/json_io.hpp"

namespace lockstep::io {

enum class RowKind { kStart, kTrain, kEval, kEpoch, kTest, kEnd };
const char* row_kind_name(RowKind kind);

// The phases of the per-rank spread, in core/train/rank_spread's order.
inline constexpr int kRankPhaseCount = 6;
inline constexpr std::array<const char*, kRankPhaseCount> kRankPhaseNames = {
    "data_wait", "forward", "backward", "exposed_comm", "optimizer", "busy"};

struct MetricsRow {
  using Number = std::optional<double>;
  using Count = std::optional<int64_t>;

  RowKind kind = RowKind::kTrain;
  int64_t epoch = 0;  // 1-based
  int64_t step = 0;   // global optimizer steps done
  // Training (train, epoch and end rows).
  Number train_loss, train_acc, samples_per_s;
  Number seconds, data_wait_s, forward_s, backward_s, exposed_comm_s, optimizer_s;  // of these steps
  Number lr, loss_scale;
  Number mfu_pct;  // GPU runs: model FLOPs utilisation of rank 0's GPU over the window
  Count skipped_steps, clipped_steps;
  // Evaluations (eval, epoch, test and end rows).
  Number val_loss, val_acc, val_f1, val_cer, val_wer;
  Number test_loss, test_acc, test_f1, test_cer, test_wer;
  // Test rows: which split and which weights.
  std::string split, selected_by;
  Count weights_step;
  std::optional<bool> eval_hflip;
  // End rows.
  std::string stopped_early;
  Count world_size, global_batch, params, grad_wire_bytes, grad_buckets, first_step_unix_ms;
  // Start rows (and unix_time in every row).
  Count to_step;  // the step the job trains to; absent in older rows, written by jobs that had work to do
  Number unix_time;
  std::vector<std::pair<std::string, std::string>> versions;  // (component, version)
  // Train rows at more than one rank: ms/step per phase, (min, median, max) over ranks.
  std::array<std::array<Number, 3>, kRankPhaseCount> rank_ms{};
  Count slowest_rank;
  std::string slowest_host;
  // Train rows of GPU runs: each rank's GPU as NVML read it at the row (index = rank; NaN,
  // written null: not measured on that rank), empty where nothing was measured.
  std::vector<double> gpu_util_pct, gpu_mem_gib, gpu_power_w;

  void set_times(const Times& t);
  Json to_json() const;
  // WHAT names the row's file in errors (an unknown kind, a field of the wrong type).
  static MetricsRow from_json(const Json& j, const std::string& what);
  // The row's TensorBoard scalars: (tag, value), finite values only.
  std::vector<std::pair<std::string, double>> scalars() const;
};

// A line of a metrics.jsonl that is no row of lockstep's (not a JSON object with a "step": a
// note typed into the file) is said as what it is, "line 3: 'my note'" (printable ASCII, at
// most 80 bytes), and left out by every reader: the resume (metrics_log) and the reports.
// HOLDS_METRICS_ROW: whether PARSED (a line parsed without exceptions) is a row.
bool holds_metrics_row(const Json& parsed);
std::string foreign_line_note(const std::string& line, int64_t line_number);

// The rows of the metrics.jsonl at PATH, in order. A last line cut short (a run writing it
// right now, or killed mid-write: metrics_log drops it on resume too) is skipped; a foreign
// line (above) is skipped and said in FOREIGN (optional); a row with a field of the wrong
// type throws naming PATH and the line.
std::vector<MetricsRow> read_metrics_rows(const std::string& path, std::vector<std::string>* foreign = nullptr);

}  // namespace lockstep::io
