// step_timer: where a step's time goes — data, forward, backward, exposed communication,
// optimizer — measured where the work runs.
//
// The trainer marks the end of each phase as it issues the work (mark(kForward) after
// the forward pass is issued, ...); the time between two marks belongs to the second.
// - CPU: marks are host clock readings; the work is done when the call returns.
// - CUDA: marks are CUDA events recorded on the compute stream; a phase's time is the
//   device time between its events. The host returns from backward() long before the
//   device has done it, so host clocks would put the real time in a later phase (a 7 ms
//   "backward" in an 80 ms step). The exposed communication is the device time from the
//   end of backward to the point where the compute stream may use the averaged gradients,
//   i.e. the wait for the NCCL stream. Events are read only by collect() (at log steps),
//   which waits for the last one: no host sync inside the step loop.
// A step's first phase starts at begin_step(); on the device that is when the device
// reached that point (it may still be finishing the previous step).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/base/clock.hpp"
#include "core/train/step_trace.hpp"

namespace lockstep {

enum class Phase { kData, kForward, kBackward, kComm, kOptimizer };

class StepTimer {
 public:
  explicit StepTimer(torch::Device device);
  ~StepTimer();
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

  bool on_device() const { return device_.is_cuda(); }
  // --trace.steps: the timer's marks also go to TRACE (step_trace.hpp); it is written
  // when its range ends or when the timer goes.
  void set_trace(std::unique_ptr<StepTrace> trace) { trace_ = std::move(trace); }
  void trace_span(const std::string& name, Clock::time_point begin) {
    if (trace_) trace_->span(name, begin, Clock::now());
  }
  void begin_step();
  void mark(Phase p);
  // Adds the phase times of every step since the last collect() to T (not T->seconds).
  void collect(Times* t);

 private:
  struct Mark {
    Phase phase;
    Clock::time_point host;
    size_t event = 0;  // CUDA: index into the event pool
    bool begin = false;
  };
  void record(Mark m);

  torch::Device device_;
  std::vector<Mark> marks_;
  struct EventPool;
  std::unique_ptr<EventPool> events_;  // CUDA only
  std::unique_ptr<StepTrace> trace_;
};

}  // namespace lockstep
