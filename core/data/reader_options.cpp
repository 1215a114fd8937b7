// reader_options: see reader_options.hpp.
#include "core/data/reader_options.hpp"

namespace lockstep {

io::ReaderOptions reader_options(const Config& cfg) {
  io::ReaderOptions o;
  o.mode = cfg.data_mode == DataMode::kMemory   ? io::ReadMode::kMemory
           : cfg.data_mode == DataMode::kStream ? io::ReadMode::kStream
                                                : io::ReadMode::kAuto;
  o.memory_budget_mb = cfg.memory_budget_mb;
  o.block_samples = cfg.block_samples;
  o.shuffle_blocks = cfg.shuffle_blocks;
  o.bucket_batches = cfg.bucket_batches;
  return o;
}

}  // namespace lockstep
