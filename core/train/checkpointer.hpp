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
//    world size), the fp16 scaler, and the TrainState (position, epoch statistics so far,
//    stop rule, last validation scores: train_state.hpp).
// 3. save / update_best first agree that no rank's parameters or BatchNorm statistics hold a
//    NaN or an infinity (an allreduce; if one does, every rank throws alike and nothing is
//    written), then gather every rank's RNG state (collective); every rank settles Adam's
//    host step counts from the device (step_counter.hpp: one read); rank 0 serialises the
//    state to host memory and hands it to the recorder's background writer.
// 4. update_best also keeps a host copy of the best weights on every rank, so the final
//    test evaluation (restore_best) needs no file; a resumed run whose best predates it
//    reads best.ckpt instead.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/train/checkpoint_state.hpp"
#include "io/dataset/shard_format.hpp"
#include "io/records/checkpoint_store.hpp"

namespace torch::optim {
class Optimizer;
}

namespace lockstep {

class LossScaler;
class MpiRuntime;
class StepCounter;
class Recorder;
class HostCopies;
class StateSnapshot;
class TrainState;

// What a checkpoint saves besides the TrainState, and a resume restores: the stateful
// parts of a run (owned by Session) and where they live.
struct CheckpointParts {
  Net& model;
  torch::optim::Optimizer& opt;
  StepCounter& counter;  // settles the optimizer's host step counts before they are saved
  LossScaler& scaler;
  const MpiRuntime& mpi;
  torch::Device device;
  std::string reader;  // how the training reader orders the data (Session::reader_key)
};

// Rank 0's reading of --run.resume, agree_resume_path's and doctor's: PATH, the checkpoint the
// run resumes ("" to start afresh: none yet), or PROBLEM, why it can do neither (--resume auto
// over checkpoints none of which verifies, --resume none over checkpoints, a --resume PATH
// that does not read); SKIPPED: the unusable checkpoints --resume auto passed over, each with
// its reason.
struct ResumeChoice {
  std::string path, problem;
  std::vector<std::string> skipped;
  // PATH's meta (from the read that verified it); --resume auto: the checkpoints past it whose
  // name says another step than they hold (a renamed copy: pruning by name would keep them
  // over the real ones).
  std::string meta_json;
  std::vector<std::string> misnamed;
};
ResumeChoice choose_resume(const Config& cfg);

// What a mismatch across ranks says: one run directory (and one checkpoint file) for all.
inline constexpr const char* kSharedRunDir =
    "the run directory and checkpoints must be one copy every node reads (shared storage), not a node-local one";
// Collective: PATH read on every rank, which must read the same bytes (CRC-32), or every rank
// throws naming the ranks that differ and what each read (a copy per node that differs, a
// node that cannot see it: each rank's weights were another model's, silently).
io::CheckpointData read_on_every_rank(const MpiRuntime& mpi, const std::string& path);

class Checkpointer {
 public:
  // CFG and SPEC: the run's configuration and data (recorded in every checkpoint, and
  // checked against the one a run resumes).
  // DATA: the run's dataset (its spec goes into every checkpoint; its name and source
  // must match a checkpoint this run resumes).
  Checkpointer(const Config& cfg, const io::Manifest& data, CheckpointParts parts, Recorder& rec);
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  std::string agree_resume_path();  // collective; rank 0 sets aside checkpoints past the one chosen
  // Restores the parts and STATE from PATH for a run of STEPS_PER_EPOCH steps of
  // GLOBAL_BATCH samples.
  void resume(const std::string& path, TrainState* state, int64_t global_batch, int64_t steps_per_epoch);
  // Collective: a checkpoint of STATE (its epoch statistics must include the open log
  // window); skipped when this process saved (or resumed) this very position. The same step
  // at the next epoch's start (its end work done since) is saved again, over the first.
  void save(const TrainState& state);
  // Collective: best.ckpt when STATE's last validation improves --ckpt.best-metric.
  void update_best(const TrainState& state);
  // Every rank: the best weights into the model. Returns their step; -1 when there is no
  // best (the model keeps its weights).
  int64_t restore_best();
  int64_t best_step() const { return best_step_; }
  std::string best_path() const;

 private:
  CheckpointMeta meta_of(const TrainState& state) const;
  // Collective: the state's payload on rank 0 (copies queued now, serialised by whoever
  // calls it: the checkpoint writer), "" elsewhere.
  // One per STEP: best.ckpt and the step checkpoint of one step share the rank-0 copies
  // (while the first is still held by the writer) and the generator-state gather.
  std::function<std::string()> snapshot(int64_t step);
  void read_best_standing();  // where an earlier best.ckpt stands (a resumed run)
  // Rank 0: what would outlive a resume from STEP in this run's folder, moved aside: LATER
  // (checkpoint files) and a best.ckpt chosen past STEP.
  void set_aside_later(std::vector<std::string> later, int64_t step);

  const Config& cfg_;
  const io::Manifest& data_;
  const io::DatasetSpec& spec_;  // data_.spec
  CheckpointParts parts_;
  Recorder& rec_;
  TrainPosition last_saved_{-1, -1, -1};  // the position this process saved or resumed last
  int64_t gathered_step_ = -1;          // the step gathered_rng_ was gathered at (every rank)
  std::vector<uint8_t> gathered_rng_;   // every rank's generator states, on rank 0
  int64_t shared_step_ = -1;            // rank 0: the step of shared_
  std::weak_ptr<const StateSnapshot> shared_;
  double best_value_ = 0.0;  // larger is better (val_loss negated)
  int64_t best_step_ = -1;
  std::unique_ptr<HostCopies> best_weights_;  // parameters and buffers at best_step_, in host memory
};

}  // namespace lockstep
