// config: everything a training or evaluation run is told, with its defaults. Filled by
// app/options (Boost.Program_options: jobs/*.ini and --section.key flags); core reads it.
#pragma once

#include <cstdint>
#include <string>

namespace lockstep {

struct Config {
  // [data]
  std::string data_dir;              // data.path: directory with manifest.json
  std::string train_split = "train";
  std::string val_split = "test";
  std::string data_mode = "auto";    // auto | memory | stream
  int64_t memory_budget_mb = 4096;   // per rank, for data.mode auto
  int prefetch = 4;                  // batches the loader thread keeps ready
  std::string remainder = "drop";    // drop | wrap (io/shard_plan.hpp)
  int64_t block_samples = 0;         // stream: samples per read, 0: ~4 MiB
  int64_t shuffle_blocks = 16;       // stream: blocks per shuffle window
  int64_t random_crop = 0;           // pad for random crops of images, 0: off
  bool hflip = false;                // random horizontal flips of images
  // [model]
  std::string model = "cnn";
  double dropout = 0.25;
  // [train]
  int epochs = 1;
  int64_t batch_size = 64;  // per rank
  double lr = 0.05;
  double momentum = 0.9;
  double weight_decay = 0.0;
  std::string schedule = "constant";  // constant | cosine
  int64_t warmup_steps = 0;
  double min_lr_fraction = 0.0;  // cosine floor, as a fraction of lr
  uint64_t seed = 42;
  int64_t max_steps = 0;  // stop after this global step (0: run all epochs)
  int threads = 1;        // intra-op threads per rank
  int64_t log_every = 50;
  // [run]
  std::string run_dir = "runs/default";
  std::string resume = "auto";  // auto | none | PATH
  // [ckpt]
  int64_t ckpt_every = 0;  // steps between checkpoints; 0: at epoch ends and at the end
  int keep_last = 3;
  // [dist]
  std::string backend = "auto";  // auto | mpi | nccl
  double bucket_mb = 25.0;
  std::string overlap = "auto";  // true | false | auto: reduce buckets during backward (run_setup.hpp)
  int grad_accum = 1;           // micro-steps per optimizer step
  double comm_timeout = 300.0;  // seconds before the watchdog ends a stuck job
  bool sync_buffers = false;    // average BatchNorm statistics before evaluation/checkpoints
  // [debug] fault injection for the no-hang tests: none | throw | stall | kill
  std::string fault = "none";
  int fault_rank = 1;
  int64_t fault_step = 0;
  // evaluate
  std::string checkpoint;  // evaluate --checkpoint
  // Recorded, not parsed: the resolved config as INI and the command line.
  std::string resolved_ini;
  std::string command_line;
};

}  // namespace lockstep
