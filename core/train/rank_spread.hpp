// rank_spread: every rank's step-time breakdown at each log row, and the straggler rule.
//
// 1. gather_rank_times() is collective (one all-reduce of 6 x world doubles, each rank
//    filling its slot): every rank gets every rank's ms/step of data wait, forward,
//    backward, exposed comm, optimizer and busy time (= the step minus exposed comm: what
//    the rank itself spent; a straggler has the most busy time, and the others wait for it
//    in exposed comm).
// 2. RankSpread::phase() gives min / median / max over ranks (and which ranks) of a phase.
// 3. GPU runs: every rank's GPU gauges (gpu_gauges.hpp: utilisation, memory, power) at each
//    log row, gathered like the times and written per rank into the row; rank 0's log line
//    gives them (over ranks: min-max). Not measured (no NVML): absent, never an error. MFU:
//    the model FLOPs of rank 0's window over its seconds and its GPU's peak.
// 4. StragglerWatch: the same rank the slowest (by busy time) in WINDOWS consecutive log
//    windows, each time more than PERCENT slower than the median rank, gives one warning
//    naming the rank, its host and where its time goes; a new warning only after the
//    streak breaks. Every rank computes the same (the data are identical), rank 0 logs.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/base/clock.hpp"
#include "core/train/epoch_stats.hpp"
#include "core/train/gpu_gauges.hpp"
#include "core/train/mfu.hpp"
#include "io/records/metrics_row.hpp"

namespace lockstep {

enum RankPhase : int { kRankData, kRankForward, kRankBackward, kRankComm, kRankOptimizer, kRankBusy, kRankPhases };
static_assert(kRankPhases == io::kRankPhaseCount, "the metrics row holds every phase's spread");
// Metrics-row stems: "data_wait", "forward", "backward", "exposed_comm", "optimizer", "busy".
const char* rank_phase_name(int phase);

struct PhaseSpread {
  double min = 0, median = 0, max = 0;  // ms/step over ranks
  int min_rank = 0, max_rank = 0;
};

struct RankSpread {
  std::vector<std::array<double, kRankPhases>> ms;  // per rank, ms/step
  int world() const { return static_cast<int>(ms.size()); }
  PhaseSpread phase(int p) const;
  int slowest() const { return phase(kRankBusy).max_rank; }
};

// Collective: MINE are this rank's times over STEPS steps.
RankSpread gather_rank_times(const Times& mine, int64_t steps, int rank, int world, const AllreduceSum& sum);

class StragglerWatch {
 public:
  StragglerWatch(int windows, double percent) : windows_(windows), percent_(percent) {}
  // The warning text when this window completes a straggler streak, else nothing.
  std::optional<std::string> update(const RankSpread& s, const std::vector<std::string>& hosts);

 private:
  int windows_;
  double percent_;
  int rank_ = -1, streak_ = 0;
  bool warned_ = false;
};

// What the trainer calls at each log row. Collective (every rank, same order).
class RankMonitor {
 public:
  // GPU: the rank's device (on a GPU its gauges are read at each row; one line says so at
  // start where NVML is missing) and what MFU is computed from (mfu.hpp).
  RankMonitor(int rank, int world, std::vector<std::string> hosts, AllreduceSum sum, int windows, double percent,
              GpuWatch gpu = {});
  ~RankMonitor();
  // Gathers every rank's times of this window (MINE: this rank's over STEPS steps), sets
  // ROW's per-phase spread and slowest rank and host, logs a straggler warning (rank 0),
  // and returns the text for rank 0's log line ("" at 1 rank); on GPUs the gauges too.
  std::string observe(const Times& mine, int64_t steps, io::MetricsRow* row);

 private:
  // Collective on GPU runs: the gauges and (rank 0's window: MINE over STEPS) the MFU.
  std::string observe_gpus(const Times& mine, int64_t steps, io::MetricsRow* row);

  int rank_, world_;
  std::vector<std::string> hosts_;
  AllreduceSum sum_;
  StragglerWatch watch_;
  GpuWatch gpu_;
  std::unique_ptr<GpuGauges> gauges_;  // GPU runs only
};

}  // namespace lockstep
