// fault_injection: see fault_injection.hpp.
#include "core/train/fault_injection.hpp"

#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/config/enums.hpp"

namespace lockstep {

void inject_fault(const Config& cfg, int rank, int64_t step) {
  if (cfg.fault == Fault::kNone || cfg.fault == Fault::kStallStart || cfg.fault == Fault::kSlowStart ||
      rank != cfg.fault_rank)
    return;
  if (cfg.fault == Fault::kSlow) {
    if (step >= cfg.fault_step) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(cfg.fault_slow_ms));
    return;
  }
  if (step != cfg.fault_step) return;
  log::warn(fmt::format("injecting fault '{}' at step {} (--debug.fault)", to_string(cfg.fault), step));
  if (cfg.fault == Fault::kThrow) throw Error(fmt::format("injected failure at step {} (--debug.fault throw)", step));
  if (cfg.fault == Fault::kOom)  // what the CUDA caching allocator throws, in its words
    TORCH_CHECK_WITH(OutOfMemoryError, false, "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                     "capacity of 79.19 GiB of which 1.06 GiB is free. (simulated: --debug.fault oom)");
  if (cfg.fault == Fault::kKill) std::raise(SIGKILL);
  std::this_thread::sleep_for(std::chrono::hours(1));  // stall: the other ranks' watchdogs end the job
}

void inject_startup_fault(const Config& cfg, int rank) {
  if ((cfg.fault != Fault::kStallStart && cfg.fault != Fault::kSlowStart) || rank != cfg.fault_rank) return;
  log::warn(fmt::format("injecting fault '{}' in start-up (--debug.fault)", to_string(cfg.fault)));
  if (cfg.fault == Fault::kSlowStart) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(cfg.fault_slow_ms));
    return;
  }
  std::this_thread::sleep_for(std::chrono::hours(1));
}

}  // namespace lockstep
