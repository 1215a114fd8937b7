// fault_injection: what the no-hang and observability tests make one rank do
// (--debug.fault, --debug.fault-rank, --debug.fault-step, --debug.slow-ms):
//   throw   an error at the fault step (the job must end with one message naming it)
//   kill    SIGKILL at the fault step (a dead rank)
//   stall   sleep for an hour at the fault step (the others' watchdogs end the job)
//   slow    sleep --debug.slow-ms every step from the fault step on (a straggler)
//   stall-start  sleep for an hour in start-up, before the pre-flight check (a rank stuck
//           loading its data: the others wait in the pre-flight collective)
//   slow-start  sleep --debug.slow-ms there (a signal that lands in start-up)
#pragma once

#include <cstdint>

#include "core/config/config.hpp"

namespace lockstep {

// Called by the trainer before each step; STEP is the global steps done so far.
void inject_fault(const Config& cfg, int rank, int64_t step);
// Called by the session once its data and model are ready, before the pre-flight check.
void inject_startup_fault(const Config& cfg, int rank);

}  // namespace lockstep
