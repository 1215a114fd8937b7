// config: everything a training or evaluation run is told, with its defaults at the
// fields. Filled by app/options (Boost.Program_options: jobs/*.ini and --section.key
// flags), which validates every value once; core reads it. Closed choices are enums
// (enums.hpp), never strings.
#pragma once

#include <cstdint>
#include <string>

#include "core/config/enums.hpp"

namespace lockstep {

struct Config {
  // [data]
  std::string data_dir;              // data.path: directory with manifest.json
  std::string train_split = "train";
  // Honest by default: validation (best.ckpt, evaluations during training) on 'val', a
  // split `lockstep shard` carves out of train; 'test' evaluated once, at the end. "none"
  // turns either off; val-split = test-split is allowed but logged as selecting on test.
  std::string val_split = "val";    // "none": no validation (parsed into use_val by check_config)
  std::string test_split = "test";  // "none": no final test (use_test)
  bool use_val = true, use_test = true;
  DataMode data_mode = DataMode::kAuto;
  int64_t memory_budget_mb = 4096;   // per rank, for data.mode auto
  int prefetch = 4;                  // batches the loader thread keeps ready
  Remainder remainder = Remainder::kDrop;  // io/loader/shard_plan.hpp
  int64_t block_samples = 0;         // stream: samples per read, 0: ~4 MiB
  int64_t shuffle_blocks = 16;       // stream: blocks per shuffle window
  int read_threads = 0;              // threads reading shards at once per rank; 0: min(4, the rank's cores)
  int64_t bucket_batches = 50;       // ragged data: batches per length-sorting window, 0: no bucketing
  int64_t random_crop = 0;           // pad for random crops of images and clips, 0: off
  bool hflip = false;                // random horizontal flips of images and clips
  int64_t time_jitter = 0;           // clips: random temporal shift of up to this many frames
  double brightness = 0.0;           // random brightness shift in [-b, b] (normalised units)
  double contrast = 0.0;             // random contrast factor in [1-c, 1+c]
  double random_erase = 0.0;         // probability of erasing a random rectangle per sample
  // [model]
  std::string model = "cnn";  // cnn | resnet | mlp | cnn1d | lmu | gru | c3d | r3d | torchscript:PATH (core/model/registry.hpp)
  double dropout = 0.25;
  int64_t model_width = 0;  // 0: the model's default
  int model_depth = 18;     // resnet: 18 | 34; r3d: 10 | 18
  bool checkpoint_activations = false;  // recompute block activations in backward (resnet, r3d, c3d)
  MemoryFormat memory_format = MemoryFormat::kAuto;  // activations' layout (core/model/memory_format.hpp)
  bool sync_bn = false;     // BatchNorm statistics over the global batch (core/model/sync_bn.hpp)
  FusedBn fused_bn = FusedBn::kAuto;  // BatchNorm (+ residual) + ReLU as one node (core/model/bn_act.hpp)
  PoolKernel max_pool = PoolKernel::kAuto;  // whose max-pool kernels (core/model/max_pool_layer.hpp)
  std::string init_from;             // a checkpoint or safetensors file: warm start, weights only
  std::string init_exclude;          // comma-separated name prefixes not loaded (a new head)
  std::string freeze;                // comma-separated name prefixes kept untrainable
  // [train]
  int epochs = 1;
  int64_t batch_size = 64;  // per rank
  OptimizerKind optimizer = OptimizerKind::kSgd;
  bool fused_optimizer = true;  // ATen's fused multi-tensor step (core/optim/fused_step.hpp)
  CudaGraph cuda_graph = CudaGraph::kAuto;  // GPUs: the whole step as one CUDA graph (core/train/static_step.hpp)
  bool cudnn_benchmark = true;  // GPUs: cuDNN times its algorithms per shape (fixed shapes only: not ragged data)
  bool copy_stream = true;      // GPUs: batches copied on a stream of their own, a batch ahead (core/data/batch_feed.hpp)
  double lr = 0.05;
  LrScaling lr_scaling = LrScaling::kNone;  // lr x f(world size)
  double momentum = 0.9;
  bool nesterov = false;
  double beta1 = 0.9, beta2 = 0.999;  // adam, adamw
  double weight_decay = 0.0;
  Schedule schedule = Schedule::kConstant;
  int64_t warmup_steps = 0;
  double warmup_epochs = 0.0;    // added to warmup_steps, in epochs
  double min_lr_fraction = 0.0;  // cosine floor, as a fraction of lr
  double step_epochs = 1.0;      // step schedule: epochs between decays
  double step_gamma = 0.1;       // step schedule: decay factor
  double clip_norm = 0.0;        // max global gradient norm, 0: off
  std::string class_weights = "none";  // none | auto | w0,w1,... (core/optim/loss.hpp)
  bool weighted_classes = false;       // class_weights is not "none" (set by check_config)
  double label_smoothing = 0.0;
  Amp amp = Amp::kNone;          // core/optim/amp.hpp
  double loss_scale = 65536.0;   // fp16: the dynamic loss scale's start (core/optim/loss_scaler.hpp)
  int64_t loss_scale_growth = 2000;  // fp16: finite steps in a row before the scale doubles
  int64_t eval_every = 0;        // steps between evaluations; 0: at epoch ends only
  // Stopping on validation (core/train/stop_rule.hpp): early stopping, and a target.
  BestMetric early_stop_metric = BestMetric::kNone;
  int early_stop_patience = 3;       // evaluations without improvement
  double early_stop_min_delta = 0.0;
  std::string stop_at;               // "val_acc>=0.93": stop once validation reaches it (parsed into:)
  BestMetric stop_metric = BestMetric::kNone;
  double stop_value = 0.0;
  bool tensorboard = true;       // event files under RUN_DIR/tb
  ProgressMode progress = ProgressMode::kAuto;  // core/base/log.hpp
  int64_t seed = 42;      // 0 .. 2^63-1: a negative seed is refused (there is no "random seed")
  int64_t max_steps = 0;  // stop after this global step (0: run all epochs)
  int threads = 1;        // intra-op threads per rank
  int64_t log_every = 50;
  // [run]
  std::string run_dir = "runs/default";
  std::string resume = "auto";  // auto | none | PATH (parsed into:)
  ResumeMode resume_mode = ResumeMode::kAuto;
  // [ckpt]
  int64_t ckpt_every = 0;  // steps between checkpoints; 0: at epoch ends and at the end
  int keep_last = 3;
  BestMetric best_metric = BestMetric::kValF1;  // keeps best.ckpt
  // [dist]
  Backend backend = Backend::kAuto;
  double bucket_mb = 25.0;
  Overlap overlap = Overlap::kAuto;  // reduce buckets during backward (core/dist/placement.hpp)
  Compress compress = Compress::kNone;  // gradients all-reduced in 16 bits (core/dist/grad_reducer.hpp)
  int grad_accum = 1;           // micro-steps per optimizer step
  double comm_timeout = 300.0;  // seconds before the watchdog ends a stuck job
  std::string trace_steps;          // "A-B": a Chrome trace per rank of those steps (core/train/step_trace.hpp)
  bool trace_ops = true;            // with trace_steps: LibTorch's operator profile of them too (op_profile.hpp)
  int straggler_windows = 3;        // warn when one rank is the slowest this many log windows in a row (0: off)
  double straggler_percent = 20.0;  // ... each time this much slower than the median rank
  bool sync_buffers = false;    // before evaluation/checkpoints: average BatchNorm statistics (else rank 0's)
  // [debug] fault injection for the no-hang tests
  Fault fault = Fault::kNone;
  int fault_rank = 1;
  int64_t fault_step = 0;
  double fault_slow_ms = 50.0;  // slow: the fault rank sleeps this long every step from fault_step on
  int64_t sync_check = 0;  // GPUs: from this global step on, a host sync inside the step is an error (0: off)
  // evaluate
  std::string checkpoint;  // evaluate --checkpoint
  std::string eval_split = "test";  // evaluate --split
  std::string eval_out;    // evaluate: write the result as JSON here
  bool force_output = false;  // evaluate, predict, export, doctor: --force replaces an existing output file
  bool eval_hflip = false;  // every evaluation averages each image's probabilities with its mirror's
  bool any_units = false;   // evaluate/predict/export: data in other units than the model's is taken (units_check.hpp)
  // predict / export
  std::string predict_out;  // predict: .csv or .h5
  int64_t top_k = 0;        // predict: 0: every class's probability
  std::string export_out;   // export: the .safetensors file
  std::string export_format = "safetensors";
  // doctor
  std::string doctor_out;          // write the all-reduce timing as JSON here
  double doctor_allreduce_mb = 16;  // size of the timed all-reduce
  // Recorded, not parsed: the --config file (an input no output may overwrite), the resolved
  // config as INI and the command line.
  std::string config_file;
  std::string resolved_ini;
  std::string command_line;
};

}  // namespace lockstep
