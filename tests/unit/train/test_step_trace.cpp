// --trace.steps: the range parser, and a trace holding exactly the range's phases and the
// collectives that started inside it.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <thread>

#include "core/train/step_timer.hpp"
#include "core/train/step_trace.hpp"
#include "io/util/file_util.hpp"
#include "io/util/json_io.hpp"
#include "test_helpers.hpp"

using namespace lockstep;

TEST(StepTrace, ParsesRanges) {
  EXPECT_TRUE(parse_trace_range("").empty());
  EXPECT_EQ(parse_trace_range("7").first, 7);
  EXPECT_EQ(parse_trace_range("7").last, 7);
  EXPECT_EQ(parse_trace_range("3-9").last, 9);
  EXPECT_THROW(parse_trace_range("0-3"), UsageError);
  EXPECT_THROW(parse_trace_range("5-2"), UsageError);
  EXPECT_THROW(parse_trace_range("a-b"), UsageError);
  EXPECT_THROW(parse_trace_range("1-20000"), UsageError);
}

// Issue 31, minor list: a range past the run's end wrote nothing and said nothing.
TEST(StepTrace, ARangeTheRunMissesIsSaid) {
  EXPECT_EQ(trace_range_note(parse_trace_range(""), 0, 10), "");
  EXPECT_EQ(trace_range_note(parse_trace_range("3-9"), 0, 10), "");
  EXPECT_EQ(trace_range_note(parse_trace_range("50-60"), 0, 40),
            "--trace.steps 50-60: this run ends at step 40, so no trace will be written");
  EXPECT_EQ(trace_range_note(parse_trace_range("5-8"), 20, 40),
            "--trace.steps 5-8: this run resumes after step 20, so no trace will be written");
  EXPECT_EQ(trace_range_note(parse_trace_range("35-45"), 0, 40),
            "--trace.steps 35-45: only steps 35-40 run here; the trace holds those");
  EXPECT_EQ(trace_range_note(parse_trace_range("15-25"), 20, 40),
            "--trace.steps 15-25: only steps 21-25 run here; the trace holds those");
}

TEST(StepTrace, HoldsTheRangesPhasesAndCollectives) {
  const std::string dir = lockstep::testing::fresh_dir("trace");
  FlightRecorder flight;
  flight.end(flight.begin("before"));
  {
    StepTimer timer(torch::kCPU);
    timer.set_trace(std::make_unique<StepTrace>(parse_trace_range("3-4"), 1, 2, "hostA", dir, &flight, 1));  // resumed at 1
    for (int step = 2; step <= 6; ++step) {
      timer.begin_step();
      timer.mark(Phase::kData);
      timer.mark(Phase::kForward);
      flight.end(flight.begin("gradient bucket 0 of step " + std::to_string(step)));
      timer.mark(Phase::kBackward);
      timer.mark(Phase::kComm);
      timer.mark(Phase::kOptimizer);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      flight.end(flight.begin("between steps " + std::to_string(step)));  // e.g. an epoch end's evaluation
      // Collectives are stamped by the system clock, steps by the steady clock plus an
      // offset read once: microseconds apart. Steps a few ms apart are told apart (a
      // collective a few µs before a step's begin was counted in it: a flaky failure).
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
  }
  const io::Json t = io::parse_json(io::read_text_file(dir + "/rank-1.json"), "trace");
  std::set<int64_t> steps;
  std::set<std::string> collectives;
  int phases = 0;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_EQ(e["pid"], 1);
    if (e["cat"] == "step") ++phases, steps.insert(e["args"]["step"].get<int64_t>());
    if (e["cat"] == "collective") collectives.insert(e["name"].get<std::string>());
  }
  EXPECT_EQ(phases, 10);
  EXPECT_EQ(steps, (std::set<int64_t>{3, 4}));
  EXPECT_EQ(collectives, (std::set<std::string>{"gradient bucket 0 of step 3", "gradient bucket 0 of step 4"}));
  // Which job wrote it: report merges one job's files (trace_merge).
  EXPECT_EQ(t["lockstep"]["rank"], 1);
  EXPECT_EQ(t["lockstep"]["world"], 2);
  EXPECT_EQ(t["lockstep"]["first_step"], 3);
  EXPECT_EQ(t["lockstep"]["last_step"], 4);
  EXPECT_EQ(t["lockstep"]["job_first_step"], 2);
  EXPECT_EQ(t["lockstep"]["ops"], false);
}

// A job resumed inside the range traces what it runs, and says so (helper-40: "trace of
// steps 5-8 written" and first_step 5 for a job that ran steps 7 and 8).
TEST(StepTrace, AJobResumedInsideTheRangeNamesTheStepsItRan) {
  const std::string dir = lockstep::testing::fresh_dir("trace");
  {
    StepTimer timer(torch::kCPU);
    timer.set_trace(std::make_unique<StepTrace>(parse_trace_range("5-8"), 0, 1, "hostA", dir, nullptr, 6));
    for (int step = 7; step <= 9; ++step) {
      timer.begin_step();
      for (const Phase p : {Phase::kData, Phase::kForward, Phase::kBackward, Phase::kComm, Phase::kOptimizer}) timer.mark(p);
    }
  }
  const io::Json t = io::parse_json(io::read_text_file(dir + "/rank-0.json"), "trace");
  EXPECT_EQ(t["lockstep"]["first_step"], 7);
  EXPECT_EQ(t["lockstep"]["last_step"], 8);
}

// --trace.ops: the summary's figures from made-up events — the device's busy time is the
// union of its kernels' intervals (overlapping kernels count once), per-step counts, and
// every synchronising CUDA call named.
TEST(OpProfile, SummarizesBusyTimeLaunchesAndSyncs) {
  using K = OpEvent::Kind;
  const std::vector<OpEvent> ev = {
      {"aten::conv2d", K::kOperator, 0, 400},        {"aten::addmm", K::kOperator, 500, 600},
      {"cudaLaunchKernel", K::kRuntime, 10, 20},     {"cudaLaunchKernel", K::kRuntime, 30, 40},
      {"cudaStreamSynchronize", K::kRuntime, 700, 900},
      {"conv_kernel", K::kKernel, 100, 300},         {"gemm_kernel", K::kKernel, 200, 400},  // overlap: 100-400
      {"Memcpy HtoD", K::kCopy, 600, 700},
  };
  const std::string s = summarize_ops(ev, /*steps=*/2, 0, 1000);
  EXPECT_NE(s.find("2 step(s) in 0.001 ms of wall clock"), std::string::npos) << s;
  EXPECT_NE(s.find("device busy 40.0%"), std::string::npos) << s;  // (400-100) + (700-600) of 1000
  EXPECT_NE(s.find("1 kernels and 1 launches per step"), std::string::npos) << s;
  EXPECT_NE(s.find("1 operators per step"), std::string::npos) << s;
  EXPECT_NE(s.find("cudaStreamSynchronize"), std::string::npos) << s;
  EXPECT_NE(s.find("gemm_kernel"), std::string::npos) << s;
  // Without device events: no device line, no sync verdict.
  const std::string cpu = summarize_ops({{"aten::mm", K::kOperator, 0, 10}}, 1, 0, 10);
  EXPECT_EQ(cpu.find("device busy"), std::string::npos) << cpu;
  EXPECT_EQ(cpu.find("host syncs"), std::string::npos) << cpu;
}

// STEPS steps of one matrix product each, traced over RANGE with --trace.ops into DIR.
void profiled_mm_steps(const std::string& dir, const std::string& range, int steps) {
  StepTimer timer(torch::kCPU);
  timer.set_trace(std::make_unique<StepTrace>(parse_trace_range(range), 0, 1, "hostA", dir, nullptr, 0, /*ops=*/true));
  torch::Tensor a = torch::ones({8, 8});
  for (int step = 1; step <= steps; ++step) {
    timer.begin_step();
    a = torch::mm(a, a) / 8.0;
    for (Phase p : {Phase::kData, Phase::kForward, Phase::kBackward, Phase::kComm, Phase::kOptimizer}) timer.mark(p);
  }
}

// --trace.ops on the CPU: LibTorch's profiler runs over exactly the traced steps and writes
// its Chrome trace (with the steps' operators) and the summary.
TEST(OpProfile, ProfilesTheTracedStepsOnTheCpu) {
  const std::string dir = lockstep::testing::fresh_dir("ops");
  profiled_mm_steps(dir, "2-3", 4);
  const std::string summary = io::read_text_file(dir + "/ops-rank-0.txt");
  EXPECT_NE(summary.find("operator profile of steps 2-3, rank 0"), std::string::npos) << summary;
  EXPECT_NE(summary.find("aten::mm"), std::string::npos) << summary;
  const io::Json t = io::parse_json(io::read_text_file(dir + "/ops-rank-0.json"), "ops trace");
  int mm = 0;
  for (const auto& e : t["traceEvents"])
    if (e.contains("name") && e["name"] == "aten::mm") ++mm;
  EXPECT_EQ(mm, 2);  // steps 2 and 3, not 1 or 4
}

// A long traced range keeps its phases, but the operator profile holds only its first
// kMaxOpSteps steps (every operator of 10000 steps would not fit in memory).
TEST(OpProfile, HoldsAtMostTheFirstStepsOfALongRange) {
  const std::string dir = lockstep::testing::fresh_dir("ops-long");
  profiled_mm_steps(dir, "2-150", 150);
  const int64_t last = 1 + StepTrace::kMaxOpSteps;
  EXPECT_NE(io::read_text_file(dir + "/ops-rank-0.txt").find("operator profile of steps 2-" + std::to_string(last)),
            std::string::npos);
  const io::Json ops = io::parse_json(io::read_text_file(dir + "/ops-rank-0.json"), "ops trace");
  int mm = 0;
  for (const auto& e : ops["traceEvents"])
    if (e.contains("name") && e["name"] == "aten::mm") ++mm;
  EXPECT_EQ(mm, StepTrace::kMaxOpSteps);
  const io::Json t = io::parse_json(io::read_text_file(dir + "/rank-0.json"), "trace");
  int phases = 0;
  for (const auto& e : t["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "step") ++phases;
  EXPECT_EQ(phases, 5 * 149);  // the phases of every traced step
}
