// run_state: what a training run carries between steps, and rank 0's outputs from it:
// the run dir (config.ini, command.txt, train.log, metrics.jsonl, tb/), checkpoints and
// resume. Internal to core's trainer.
//
// Checkpoints (docs/checkpoints.md): every rank calls save_checkpoint / save_best at the
// same steps (they gather every rank's RNG state: collective); rank 0 alone snapshots the
// state to host memory and hands it to the background writer (checkpoint_writer.hpp),
// which writes atomically, then prunes to --ckpt.keep-last. resume_from runs on every
// rank with the path rank 0 chose (run_setup.hpp: agree_resume_path).
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "core/amp.hpp"
#include "core/augment.hpp"
#include "core/batch.hpp"
#include "core/checkpoint_writer.hpp"
#include "core/config.hpp"
#include "core/evaluator.hpp"
#include "core/grad_reducer.hpp"
#include "core/loss.hpp"
#include "core/lr_schedule.hpp"
#include "core/model.hpp"
#include "core/run_setup.hpp"
#include "core/train_state.hpp"
#include "io/metrics_log.hpp"
#include "io/rank_reader.hpp"
#include "io/shard_format.hpp"
#include "io/tb_writer.hpp"

namespace lockstep {

class MpiRuntime;

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
std::string fmt(const char* format, double v);  // printf one number

// Where the time of a span of steps went (rank 0's view; host-side times, so on a GPU
// forward and backward are launch times unless a later wait absorbs them).
struct Times {
  double seconds = 0, data_wait = 0, forward = 0, backward = 0, exposed_comm = 0, optimizer = 0;
  Times& operator+=(const Times& o) {
    seconds += o.seconds, data_wait += o.data_wait, forward += o.forward, backward += o.backward;
    exposed_comm += o.exposed_comm, optimizer += o.optimizer;
    return *this;
  }
  Times operator-(const Times& o) const {
    return {seconds - o.seconds, data_wait - o.data_wait, forward - o.forward,
            backward - o.backward, exposed_comm - o.exposed_comm, optimizer - o.optimizer};
  }
  double samples_per_s(int64_t steps, int64_t global_batch) const {
    return static_cast<double>(steps * global_batch) / std::max(seconds, 1e-9);
  }
  // "data wait 0.1 ms/step (0.2%), forward ..., exposed comm ... , optimizer ..."
  std::string summary(int64_t steps) const;
};

// Everything a training run carries between steps.
struct Run {
  const Config& cfg;
  const MpiRuntime& mpi;
  io::Manifest manifest;
  int64_t steps_per_epoch = 0;
  int64_t classes = 0;
  std::unique_ptr<io::RankReader> train, val;
  AugmentOptions augment;
  Placement place;
  std::shared_ptr<Net> model;
  std::unique_ptr<torch::optim::Optimizer> opt;
  std::unique_ptr<GradReducer> reducer;
  std::unique_ptr<BatchMaker> maker;
  std::unique_ptr<Loss> loss;
  LossScaler scaler{false};
  TrainPosition pos;
  LrSchedule schedule;
  double lr = 0.0;  // the rate of the last step
  EvalResult last_eval;  // count 0: none yet
  int64_t last_eval_step = -1;
  double best_value = 0.0;  // of --ckpt.best-metric; valid when best_step >= 0
  int64_t best_step = -1;
  int64_t last_ckpt_step = -1;
  double first_step_unix = 0;  // wall clock when this process finished its first step
  torch::Tensor clipped_steps;  // device counter of steps whose norm was clipped
  // Rank 0 only:
  std::unique_ptr<io::MetricsLog> metrics;
  std::unique_ptr<io::TbWriter> tb;
  std::unique_ptr<CheckpointWriter> writer;
};

// Rank 0 only: the run dir with its config dump, command line, log, metrics and events.
void open_run_dir(Run& r);
// Collective. A step checkpoint (skipped if this step already has one).
void save_checkpoint(Run& r);
// Collective. Updates the best --ckpt.best-metric value from r.last_eval and, when it
// improved, writes checkpoints/best.ckpt.
void update_best(Run& r);
// Rank 0: waits for the background writer (before exiting).
void finish_checkpoints(Run& r);
void resume_from(Run& r, const std::string& path);
// Rank 0 only: one metrics.jsonl row (and its TensorBoard scalars).
void write_row(Run& r, const char* kind, int64_t epoch, double train_loss, double train_acc, double samples_per_s,
               const Times& t, const EvalResult* ev);

}  // namespace lockstep
