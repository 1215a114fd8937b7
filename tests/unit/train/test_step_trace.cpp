// --trace.steps: the range parser, and a trace holding exactly the range's phases and the
// collectives that started inside it.
#include <gtest/gtest.h>

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
    timer.set_trace(std::make_unique<StepTrace>(parse_trace_range("3-4"), 1, "hostA", dir, &flight, 1));  // resumed at 1
    for (int step = 2; step <= 6; ++step) {
      timer.begin_step();
      timer.mark(Phase::kData);
      timer.mark(Phase::kForward);
      flight.end(flight.begin("gradient bucket 0 of step " + std::to_string(step)));
      timer.mark(Phase::kBackward);
      timer.mark(Phase::kComm);
      timer.mark(Phase::kOptimizer);
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
}
