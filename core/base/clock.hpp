// clock: wall-clock helpers and the time breakdown of a span of steps. No MPI, no torch:
// doctor, evaluate and the trainer time things through this header (and format numbers
// with fmt).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

namespace lockstep {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
double unix_seconds();  // wall clock, for timestamps in metrics rows

// The job's clock, in unix seconds: rank 0's wall clock read at the job's start
// (MpiRuntime calls set_job_clock with it), carried forward by this process's steady clock.
// Records whose times are compared across ranks, or across a span of the job (the flight
// recorder, the step trace), take it: neither a skew between hosts' clocks nor a step of the
// wall clock during the job moves it (both made the diagnosis of a hang, its "fresh" records
// and the trace's timeline wrong: a hostile finding). Before set_job_clock: the wall clock.
// One value per process, as the wall clock is one: MpiRuntime sets it once at start-up,
// before the threads that read it start, and every recorder of the process dates on it.
double job_seconds();
void set_job_clock(double unix_now);  // job_seconds() is UNIX_NOW at this moment

// Where the time of a span of steps went. SECONDS is host wall time; the phases are host
// times on the CPU and device times (CUDA events) on a GPU (step_timer.hpp).
struct Times {
  double seconds = 0, data_wait = 0, forward = 0, backward = 0, exposed_comm = 0, optimizer = 0;
  Times& operator+=(const Times& o) {
    seconds += o.seconds, data_wait += o.data_wait, forward += o.forward, backward += o.backward;
    exposed_comm += o.exposed_comm, optimizer += o.optimizer;
    return *this;
  }
  // "data wait 0.1 ms/step (0.2%), forward ..., exposed comm ... , optimizer ..."
  std::string summary(int64_t steps) const;
};

}  // namespace lockstep
