// checkpointer: every decision about checkpoints, in one place — which one a run resumes,
// what a checkpoint holds, when best.ckpt is replaced, and the best weights for the final
// test evaluation. (Bytes on disk: io/records/checkpoint_store; rank 0's background writes:
// recorder.)
//
// Protocol (every rank, collectives in the same order everywhere):
// 1. agree_resume_path: rank 0 resolves --run.resume (auto: the newest checkpoint that
//    verifies, naming each one skipped; none: refuses over existing checkpoints; PATH)
//    and broadcasts it; every rank fails alike on a problem.
// 2. resume: every rank reads that file and first checks it can continue this run (model
//    family, width, depth, optimizer, parameter shapes, data shape): one line if not,
//    never a LibTorch assert. Then weights, optimizer state, every rank's RNG state (same
//    world size), the fp16 scaler, the position and the epoch's statistics so far.
// 3. save / update_best gather every rank's RNG state (collective); rank 0 serialises the
//    state to host memory and hands it to the recorder's background writer.
// 4. update_best also keeps a host copy of the best weights on every rank, so the final
//    test evaluation (restore_best) needs no file; a resumed run whose best predates it
//    reads best.ckpt instead.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/train/epoch_stats.hpp"
#include "core/eval/evaluator.hpp"
#include "core/train/checkpoint_state.hpp"

namespace lockstep {

struct Session;
class Recorder;

// What a run carries from step to step, and a checkpoint restores.
struct RunProgress {
  TrainPosition pos;
  WindowStats epoch;     // the current epoch's statistics so far
  double lr = 0.0;       // the rate of the last step
  EvalResult last_eval;  // count 0: none yet
  std::string stopped_early;  // why the stop rule ended the run ("" while it runs on)
  std::string stop_rule;      // the stop rule's state (stop_rule.hpp), JSON
};

class Checkpointer {
 public:
  Checkpointer(Session& s, Recorder& rec);

  std::string agree_resume_path();                  // collective
  void resume(const std::string& path, RunProgress* p);
  // Collective: a checkpoint of P (its EPOCH must include the open log window); skipped
  // when this step already has one.
  void save(const RunProgress& p);
  // Collective: best.ckpt when P.last_eval improves --ckpt.best-metric.
  void update_best(const RunProgress& p);
  // Every rank: the best weights into the model. Returns their step; -1 when there is no
  // best (the model keeps its weights).
  int64_t restore_best();
  int64_t best_step() const { return best_step_; }
  std::string best_path() const;

 private:
  CheckpointMeta meta_of(const RunProgress& p) const;
  std::string snapshot();  // collective; the serialised state on rank 0, "" elsewhere

  Session& s_;
  Recorder& rec_;
  int64_t last_saved_step_ = -1;
  double best_value_ = 0.0;  // larger is better (val_loss negated)
  int64_t best_step_ = -1;
  std::vector<torch::Tensor> best_weights_;  // host copies of parameters and buffers at best_step_
};

}  // namespace lockstep
