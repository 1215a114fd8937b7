// step_trace: --trace.steps A-B writes a Chrome/Perfetto trace (JSON) per rank of those
// global steps (1-based, inclusive) to RUN_DIR/trace/rank-R.json: one track with the
// step's phases as the step timer marks them — data, forward, backward, exposed comm,
// optimizer — one track with each collective of those steps (each gradient bucket's
// all-reduce, from the flight recorder), and checkpoint writes. `lockstep report --trace
// RUN_DIR` merges the ranks into one timeline (trace_merge.hpp). On GPUs the same phases
// are NVTX ranges for Nsight Systems (host issue times; the trace file has host times too:
// on a GPU a phase's span is when the host issued it, the device time is in the log rows).
// Times are unix microseconds, so ranks on different hosts line up to their clocks' sync.
// Each file says which job wrote it ("lockstep": rank, world, the traced steps, the job's
// first step, whether it profiled operators): report merges one job's files, never a file
// an earlier job left in trace/ (trace_merge.hpp).
// With --trace.ops (OPS) the same steps are also profiled operator by operator, kernels
// included on GPUs (op_profile.hpp): RUN_DIR/trace/ops-rank-R.{json,txt}; at most the first
// kMaxOpSteps of them (a profile holds every operator: a 10000-step one would not fit memory).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/base/clock.hpp"
#include "core/dist/flight_recorder.hpp"
#include "core/train/op_profile.hpp"

namespace lockstep {

enum class Phase;

struct TraceRange {
  int64_t first = 0, last = -1;  // empty when last < first
  bool empty() const { return last < first; }
};
// "A-B" or "A" (1-based steps); throws UsageError naming --trace.steps.
TraceRange parse_trace_range(const std::string& text);
// What a user must know when RANGE misses this run's steps DONE+1..LAST (a resumed run
// starts after DONE): no trace at all, or only part of it; "" when it is all traced.
std::string trace_range_note(const TraceRange& range, int64_t done, int64_t last);

// The "lockstep" object of a rank's trace file: which job wrote it. One schema, written by
// StepTrace and read back by trace_merge.
struct TraceHeader {
  int rank = -1;
  int64_t world = 0;
  int64_t first_step = 0, last_step = 0;  // the steps traced
  int64_t job_first_step = 0;             // the job's first step (a resumed job's is past 1)
  bool ops = false;                       // --trace.ops: the job wrote ops-rank-R files
  double unix_time = 0;                   // when the file was written, on the job clock (clock.hpp: rank 0's)
  double wall_minus_job = 0;              // this host's wall clock minus the job clock, s: the op profile's shift
};
std::string trace_header_json(const TraceHeader& h);
// Throws Error naming WHAT for a missing or malformed field.
TraceHeader parse_trace_header(const std::string& json, const std::string& what);

class StepTrace {
 public:
  // RANK of WORLD. DONE: global steps done before this run's first step (a resumed run).
  // OPS: profile the traced steps' operators too (CUDA: kernels as well).
  StepTrace(TraceRange range, int rank, int world, std::string host, std::string dir, const FlightRecorder* flight,
            int64_t done, bool ops = false, bool cuda = false);
  bool on() const { return !range_.empty(); }
  void begin_step(Clock::time_point t);        // the step timer's begin_step
  void mark(Phase phase, Clock::time_point t);  // the end of PHASE
  void span(const std::string& name, Clock::time_point begin, Clock::time_point end);  // e.g. a checkpoint
  // Writes the file once the range is over (or at the end of training with what it has).
  void finish();

  static constexpr int64_t kMaxOpSteps = 100;

 private:
  double us(Clock::time_point t) const;
  void stop_ops(int64_t last);  // writes the operator profile of steps first_traced_..LAST
  bool active() const { return on() && step_ >= range_.first && step_ <= range_.last; }

  TraceRange range_;
  int rank_, world_;
  std::string host_, dir_;
  const FlightRecorder* flight_;
  int64_t step_;  // the step running now (1-based)
  int64_t done_;  // steps done before this job's first
  bool profiled_ = false;  // --trace.ops: this job writes ops-rank-R files
  Clock::time_point last_{};
  double offset_us_;  // unix - steady, microseconds
  std::vector<std::pair<double, double>> steps_;  // each traced step's start and end, unix seconds
  int64_t first_traced_ = 0;  // the first traced step this process ran
  std::vector<std::string> events_;
  bool written_ = false;
  std::unique_ptr<OpProfile> ops_;  // --trace.ops
};

}  // namespace lockstep
