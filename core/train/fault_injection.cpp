// fault_injection: see fault_injection.hpp.
#include "core/train/fault_injection.hpp"

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/config/enums.hpp"

namespace lockstep {

void inject_fault(const Config& cfg, int rank, int64_t step) {
  if (cfg.fault == Fault::kNone || rank != cfg.fault_rank) return;
  if (cfg.fault == Fault::kSlow) {
    if (step >= cfg.fault_step) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(cfg.fault_slow_ms));
    return;
  }
  if (step != cfg.fault_step) return;
  log::warn(fmt::format("injecting fault '{}' at step {} (--debug.fault)", to_string(cfg.fault), step));
  if (cfg.fault == Fault::kThrow) throw Error(fmt::format("injected failure at step {} (--debug.fault throw)", step));
  if (cfg.fault == Fault::kKill) std::raise(SIGKILL);
  std::this_thread::sleep_for(std::chrono::hours(1));  // stall: the other ranks' watchdogs end the job
}

}  // namespace lockstep
