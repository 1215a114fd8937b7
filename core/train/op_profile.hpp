// op_profile: operator-level profiling of the traced steps (--trace.steps, with --trace.ops
// on) through LibTorch's own profiler (Kineto): every ATen operator the host runs and, on a
// GPU, every kernel, copy and CUDA runtime call (CUPTI).
//
// 1. start() turns the profiler on at the first traced step's begin (StepTrace calls it);
// 2. stop() (the step after the last traced one, or the end of training) waits for the
//    device, turns it off and writes, per rank, RUN_DIR/trace/ops-rank-R.json (Kineto's
//    Chrome trace: chrome://tracing or ui.perfetto.dev) and ops-rank-R.txt: the window's
//    wall time, the device's busy share (the union of kernel and copy intervals over the
//    window), kernels and launches per step, every synchronising CUDA call, and the
//    operators and kernels that take the most time.
// A profiler that cannot start (no CUPTI on this machine, another profiler active) is one
// warning and training goes on unprofiled; errors never end the run.
// Not thread-safe: the training thread alone calls it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lockstep {

class OpProfile {
 public:
  OpProfile(bool cuda, int rank, std::string dir);
  ~OpProfile();  // stops a profile still running (no file)
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;

  void start();
  // Writes the files for global steps FIRST..LAST; returns the summary's first line
  // ("" when nothing was profiled).
  std::string stop(int64_t first, int64_t last);

 private:
  bool cuda_;
  int rank_;
  std::string dir_;
  bool running_ = false;
};

// The summary of a profile, from its events: what stop() writes as ops-rank-R.txt. Pure:
// tested with made-up events.
struct OpEvent {
  std::string name;
  enum class Kind { kOperator, kKernel, kCopy, kRuntime, kOther } kind = Kind::kOther;
  uint64_t start_ns = 0, end_ns = 0;
};
std::string summarize_ops(const std::vector<OpEvent>& events, int64_t steps, uint64_t window_begin_ns,
                          uint64_t window_end_ns);

}  // namespace lockstep
