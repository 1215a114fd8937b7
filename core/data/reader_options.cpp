// reader_options: see reader_options.hpp.
#include "core/data/reader_options.hpp"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace lockstep {
namespace {

// The cores this rank may run on (its affinity mask: a bound rank's share of the node).
int rank_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::thread::hardware_concurrency());
}

}  // namespace

io::ReaderOptions reader_options(const Config& cfg) {
  io::ReaderOptions o;
  o.mode = cfg.data_mode == DataMode::kMemory   ? io::ReadMode::kMemory
           : cfg.data_mode == DataMode::kStream ? io::ReadMode::kStream
                                                : io::ReadMode::kAuto;
  o.memory_budget_mb = cfg.memory_budget_mb;
  o.block_samples = cfg.block_samples;
  o.shuffle_blocks = cfg.shuffle_blocks;
  o.bucket_batches = cfg.bucket_batches;
  o.read_threads = cfg.read_threads > 0 ? cfg.read_threads : std::clamp(rank_cores(), 1, 4);
  return o;
}

}  // namespace lockstep
