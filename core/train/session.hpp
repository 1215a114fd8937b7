// session: the parts of a training run, built once, in this order (every rank;
// collectives in the same order everywhere):
// 1. data: the manifest, steps per epoch (shard_plan), this rank's readers of the train,
//    validation and test splits (the last two optional: "none" or absent);
// 2. the model with seed-identical weights; every rank checks it runs the same job
//    (preflight: config, parameter shapes, manifest, versions); placement (device and
//    communicator); parameters and buffers broadcast from rank 0 anyway (a rank with
//    other defaults must not drift silently); sync-BN;
// 3. optimizer (with the world-size LR scaling rule), gradient reducer, batch maker,
//    loss, LR schedule, AMP loss scaler.
// The parts are not reassigned after construction: the trainer, checkpointer and
// evaluator use them through their own interfaces. close() ends the communicator on the
// normal path; the destructor (an error unwinding) aborts it instead.
#pragma once

#include <memory>
#include <string>

#include "core/optim/loss_scaler.hpp"
#include "core/optim/step_counter.hpp"
#include "core/data/augment.hpp"
#include "core/data/batch_maker.hpp"
#include "core/config/config.hpp"
#include "core/dist/grad_reducer.hpp"
#include "core/optim/loss.hpp"
#include "core/optim/lr_schedule.hpp"
#include "core/model/registry.hpp"
#include "core/train/mfu.hpp"
#include "core/dist/placement.hpp"
#include "core/dist/rank_placement.hpp"
#include "io/loader/rank_reader.hpp"
#include "io/dataset/shard_format.hpp"

namespace torch::optim {
class Optimizer;
}

namespace lockstep {

struct TrainPosition;  // core/train/checkpoint_state.hpp

// Where a run from POS ends and how its schedule counts (Session::plan_from): with
// STEPS_PER_EPOCH and GLOBAL_BATCH of this world, the step this world would be at for POS
// (epoch x steps per epoch + samples done / global batch) minus POS's global step is the
// schedule's offset (0 unless the checkpoint came from another world size or batch), and the
// run ends at the epochs' end in global steps, or at MAX_STEPS (> 0) when sooner.
struct RunPlan {
  int64_t planned_steps = 0;  // the global step the run ends at
  int64_t offset = 0;         // LrSchedule::offset
};
RunPlan plan_run(int64_t epochs, int64_t max_steps, int64_t steps_per_epoch, int64_t global_batch,
                 const TrainPosition& pos);
// A resume from POS, whose last step ran at LAST_LR (< 0: unknown), under SCHEDULE (planned:
// the run ends at PLANNED_STEPS) on WORLD ranks: "" when the schedule gives that step the same
// rate (give or take one step: another world size maps steps onto its own), else the line
// saying the rate jumps (another --train.lr, --train.epochs, --max-steps, ...).
std::string lr_jump_note(const LrSchedule& schedule, const TrainPosition& pos, double last_lr, int world,
                         int64_t planned_steps);

class MpiRuntime;

struct Session {
  Session(const Config& cfg, const MpiRuntime& mpi);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  void close();  // collective: the communicator's normal end

  const Config& cfg;
  const MpiRuntime& mpi;
  io::Manifest manifest;
  int64_t classes = 0;
  int64_t steps_per_epoch = 0;
  int64_t global_batch = 0;  // samples per optimizer step, all ranks
  int64_t planned_steps = 0;  // the step the run ends at (epochs, or --max-steps when sooner): plan_from
  std::unique_ptr<io::RankReader> train, val, test;  // val/test: null when off or absent
  AugmentOptions augment;
  Placement place;
  bool cudnn_benchmark = false;  // set on GPUs by --train.cudnn-benchmark (not for ragged data)
  GpuWatch gpu_watch;            // GPU runs: the device and what MFU is computed from (mfu.hpp)
  std::shared_ptr<Net> model;
  std::vector<torch::Tensor> trainable;  // the parameters the optimizer and reducer see (--model.freeze)
  std::unique_ptr<torch::optim::Optimizer> opt;
  std::unique_ptr<StepCounter> step_counter;  // Adam/AdamW's step count, for the steps that keep it on the device
  std::unique_ptr<GradReducer> reducer;
  std::unique_ptr<BatchMaker> maker;
  std::unique_ptr<Loss> loss;
  LossScaler scaler{false};
  LrSchedule schedule;
  int sync_bn_layers = 0;
  int fused_bn_layers = 0;  // --model.fused-bn on (core/model/bn_act.hpp)
  int own_pool_layers = 0;  // --model.max-pool lockstep (core/model/max_pool_layer.hpp)
  std::vector<RankPlacement> placements;  // every rank's host, GPU and CPUs (rank 0 only)

  // The plan from POS on (step 0, or a checkpoint's position; plan_run below): planned_steps and the
  // schedule's count. A checkpoint of another world size or global batch was written at a
  // global step this world would have reached at another number (it takes other samples per
  // step): the schedule counts this world's steps, as if the run had had it from the start,
  // so the learning rate continues from the resume's and ends where the run ends (before, a
  // resume from 2 ranks to 1 left a cosine short of its floor).
  // LAST_LR (>= 0: a resume) is the rate the checkpoint's last step ran at: lr_jump_note's
  // warning when the rate jumps.
  void plan_from(const TrainPosition& pos, double last_lr = -1.0);

  std::string describe() const;  // the start lines rank 0 logs
  // How the training reader orders the data, for the start lines: "memory, a new share each
  // epoch", "stream, the same share each epoch", ...
  std::string reader_text() const;
  // The same as a key checkpoints record ("memory/dealt", "stream/fixed",
  // "memory+buckets50/dealt"): a resume that changes it says what that costs.
  std::string reader_key() const;
  std::string placement_text() const;  // describe()'s placement lines
};

// Collective: before an evaluation or a checkpoint every rank takes rank 0's BatchNorm
// running statistics of MODEL (what DDP's broadcast_buffers does every step) or, with
// AVERAGE (--dist.sync-buffers), their average over COMM: evaluation then computes the
// function the checkpoint holds, on every rank.
void sync_buffers(Net& model, Communicator& comm, bool average);

}  // namespace lockstep
