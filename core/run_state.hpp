// run_state: what a training run carries between steps, and rank 0's outputs from it:
// the run dir (config.ini, command.txt, train.log, metrics.jsonl), checkpoints and
// resume. Internal to core's trainer.
//
// Checkpoints (docs/checkpoints.md): every rank calls save_checkpoint at the same steps;
// rank 0 alone writes (parameters are identical on every rank), atomically, then prunes
// to --ckpt.keep-last. resume_from runs on every rank with the path rank 0 chose
// (run_setup.hpp: agree_resume_path).
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "core/augment.hpp"
#include "core/batch.hpp"
#include "core/config.hpp"
#include "core/evaluator.hpp"
#include "core/grad_reducer.hpp"
#include "core/lr_schedule.hpp"
#include "core/model.hpp"
#include "core/run_setup.hpp"
#include "core/train_state.hpp"
#include "io/metrics_log.hpp"
#include "io/rank_reader.hpp"
#include "io/shard_format.hpp"

namespace lockstep {

class MpiRuntime;

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
std::string fmt(const char* format, double v);  // printf one number

// Everything a training run carries between steps.
struct Run {
  const Config& cfg;
  const MpiRuntime& mpi;
  io::Manifest manifest;
  int64_t steps_per_epoch = 0;
  std::unique_ptr<io::RankReader> train, val;
  AugmentOptions augment;
  Placement place;
  std::shared_ptr<Net> model;
  std::unique_ptr<torch::optim::SGD> opt;
  std::unique_ptr<GradReducer> reducer;
  std::unique_ptr<BatchMaker> maker;
  std::unique_ptr<io::MetricsLog> metrics;  // rank 0 only
  TrainPosition pos;
  LrSchedule schedule;
  double lr = 0.0;  // the rate of the last step
  double last_val_acc = -1.0;
  int64_t last_ckpt_step = -1;
};

// Where the time of a span of steps went (rank 0's view).
struct Times {
  double seconds = 0, data_wait = 0, backward = 0, exposed_comm = 0;
  Times& operator+=(const Times& o) {
    seconds += o.seconds, data_wait += o.data_wait, backward += o.backward, exposed_comm += o.exposed_comm;
    return *this;
  }
  Times operator-(const Times& o) const {
    return {seconds - o.seconds, data_wait - o.data_wait, backward - o.backward, exposed_comm - o.exposed_comm};
  }
  double samples_per_s(int64_t steps, int64_t global_batch) const {
    return static_cast<double>(steps * global_batch) / std::max(seconds, 1e-9);
  }
  std::string summary(int64_t steps) const {
    const double per = 1000.0 / static_cast<double>(std::max<int64_t>(1, steps));
    return "data wait " + fmt("%.1f", per * data_wait) + " ms/step, backward " + fmt("%.1f", per * backward) +
           " ms/step, exposed comm " + fmt("%.1f", per * exposed_comm) + " ms/step (" +
           fmt("%.1f", 100.0 * exposed_comm / std::max(seconds, 1e-9)) + "%)";
  }
};

// Rank 0 only: the run dir with its config dump, command line, log and metrics.
void open_run_dir(Run& r);
void save_checkpoint(Run& r);
void resume_from(Run& r, const std::string& path);
// Rank 0 only: one metrics.jsonl row.
void write_row(Run& r, const char* kind, int64_t epoch, double train_loss, double samples_per_s, const Times& t,
               const EvalResult* ev);

}  // namespace lockstep
