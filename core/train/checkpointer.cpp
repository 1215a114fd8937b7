// checkpointer: see checkpointer.hpp.
#include "core/train/checkpointer.hpp"

#include <fmt/format.h>

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/dist/preflight.hpp"
#include "core/base/hash.hpp"
#include "core/dist/version_info.hpp"
#include "core/eval/mirror.hpp"
#include "core/optim/loss_scaler.hpp"
#include "core/optim/step_counter.hpp"
#include "core/train/recorder.hpp"
#include "core/train/run_rows.hpp"
#include "core/train/host_copies.hpp"
#include "core/train/state_snapshot.hpp"
#include "core/train/train_state.hpp"
#include "io/records/checkpoint_store.hpp"
#include "io/util/file_util.hpp"
#include "io/loader/sample_order.hpp"

namespace lockstep {
namespace {

// Larger is better: accuracy and F1 as they are, the loss and error rates negated.
double signed_metric(const EvalResult& ev, BestMetric metric) {
  const double v = metric_value(ev, metric);
  return lower_is_better(metric) ? -v : v;
}

}  // namespace

io::CheckpointData read_on_every_rank(const MpiRuntime& mpi, const std::string& path) {
  io::CheckpointData d;
  preflight_read(mpi, "checkpoint " + path + " as each rank reads it", kSharedRunDir, [&] {
    d = io::read_checkpoint(path);
    return fmt::format("{} bytes, CRC-32 {:08x}", d.meta_json.size() + d.payload.size(), d.crc);
  });
  return d;
}

Checkpointer::Checkpointer(const Config& cfg, const io::Manifest& data, CheckpointParts parts, Recorder& rec)
    : cfg_(cfg), data_(data), spec_(data.spec), parts_(parts), rec_(rec) {}

Checkpointer::~Checkpointer() = default;

std::string Checkpointer::best_path() const { return checkpoint_dir(cfg_) + "/best.ckpt"; }

ResumeChoice choose_resume(const Config& cfg) {
  ResumeChoice c;
  const std::string dir = checkpoint_dir(cfg);
  try {  // an unreadable run dir: a problem every rank shares, not rank 0 leaving a collective
    switch (cfg.resume_mode) {
      case ResumeMode::kAuto: {
        // The newest that verifies and holds the step its name says.
        c.path = io::find_latest_valid_checkpoint(
            dir, &c.skipped, [&](int64_t named, const std::string& path, const io::CheckpointData& d) -> std::string {
              const int64_t step = meta_from_json(d.meta_json, path).pos.step;
              if (step == named) {
                c.meta_json = d.meta_json;
                return "";
              }
              c.misnamed.push_back(path);
              return fmt::format("holds step {}, not the step its name says (a renamed copy?)", step);
            });
        // Checkpoints, none usable (a storage fault, a copy cut short): a fresh start would drop
        // the run's rows and overwrite its checkpoints (a hostile finding), so the user decides.
        if (c.path.empty() && !c.skipped.empty())
          c.problem = fmt::format("--resume auto: none of the {} checkpoint(s) in {} verifies (the newest: {}); nothing "
                                  "was overwritten: restore them, or start afresh with another --run-dir",
                                  c.skipped.size(), dir, c.skipped.front());
        break;
      }
      case ResumeMode::kNone:
        if (!io::list_checkpoints(dir).empty())
          c.problem = "--resume none, but " + dir + " already holds checkpoints; use --resume auto "
                      "to continue or another --run-dir (nothing was overwritten)";
        break;
      case ResumeMode::kPath:
        c.path = cfg.resume;
        try {
          c.meta_json = io::read_checkpoint(c.path).meta_json;  // verified, and its meta kept
        } catch (const Error& e) {
          c.problem = std::string("--resume ") + e.what();
        }
        break;
    }
  } catch (const Error& e) {
    c.problem = e.what();
  }
  if (!c.problem.empty()) c.path.clear();
  return c;
}

std::string Checkpointer::agree_resume_path() {
  const MpiRuntime& mpi = parts_.mpi;
  // Rank 0 alone chooses: a rank whose node sees other checkpoints (a node-local run directory,
  // a requeue onto other nodes) started afresh or resumed another history without a word (a
  // hostile finding). Every rank's listing must be rank 0's.
  const auto listing = [&] {
    std::string names;
    for (const auto& [step, file] : io::list_checkpoints(checkpoint_dir(cfg_)))
      names += file.substr(file.find_last_of('/') + 1) + "\n";
    return Fingerprint{{"the checkpoints each rank sees in " + checkpoint_dir(cfg_), names + "(end of listing)"}};
  };
  try {
    preflight_check(mpi, listing(), kSharedRunDir);
  } catch (const UsageError&) {  // every rank alike: once more, after a network file system's cached listing expired
    std::this_thread::sleep_for(std::chrono::seconds(3));
    preflight_check(mpi, listing(), kSharedRunDir);
  }
  std::string path, problem;  // rank 0's reason to stop, shared so every rank fails the same way
  if (mpi.rank() == 0) {
    const ResumeChoice c = choose_resume(cfg_);
    for (const auto& why : c.skipped) log::warn("skipping unusable checkpoint: " + why);
    path = c.path;
    problem = c.problem;
    // The run's history continues from the resumed step: nothing past it may stay where
    // pruning (by step number), a later --resume auto or the final test (best.ckpt) would
    // take it. --resume PATH (this folder's or a copy from anywhere): every later checkpoint.
    // --resume auto: what is past its choice either does not verify (left in place: moved
    // aside, a long run's corrupt files under chaos filled its disk) or is misnamed (set aside).
    if (!path.empty() && problem.empty()) {
      try {  // only a resume that will happen moves anything: a refused one leaves the folder as it was
        std::vector<std::string> later = c.misnamed;
        const CheckpointMeta m = meta_from_json(c.meta_json, path);
        problem = resume_mismatch(m, cfg_, data_, parts_.model, path);  // refused: nothing moved
        const int64_t step = m.pos.step;
        if (cfg_.resume_mode == ResumeMode::kPath) {
          io::FileIdentity resumed, other;
          const bool known = io::file_identity(path, &resumed);
          for (const auto& [s, file] : io::list_checkpoints(checkpoint_dir(cfg_)))
            if (s > step && !(known && io::file_identity(file, &other) && other == resumed)) later.push_back(file);
        }
        if (problem.empty()) set_aside_later(std::move(later), step);
      } catch (const Error& e) {
        problem = e.what();
      }
    }
  }
  problem = mpi.broadcast_string(problem, 0);
  if (!problem.empty()) throw UsageError(problem);
  return mpi.broadcast_string(path, 0);
}

void Checkpointer::resume(const std::string& path, TrainState* state, int64_t global_batch, int64_t steps_per_epoch) {
  const io::CheckpointData d = read_on_every_rank(parts_.mpi, path);
  const CheckpointMeta m = meta_from_json(d.meta_json, path);
  const std::string mismatch = resume_mismatch(m, cfg_, data_, parts_.model, path);
  if (!mismatch.empty()) throw UsageError(mismatch);
  ExtraState extra;
  load_resume_state(d.payload, parts_.model, parts_.opt, path, &extra);
  parts_.counter.restart();
  parts_.scaler.load_state(extra.amp_scaler);
  state->from_meta(m, path, global_batch, steps_per_epoch);
  last_saved_ = m.pos;
  read_best_standing();
  // Generator states continue exactly on the same world size; on another one each rank
  // reseeds from (seed, rank, step) (docs/checkpoints.md).
  const int world = parts_.mpi.size(), rank = parts_.mpi.rank();
  if (m.world_size == world && extra.rng.defined() && extra.rng.size(0) == world) {
    const torch::Tensor row = extra.rng[rank].contiguous();
    set_rng_state_bytes(std::vector<uint8_t>(row.data_ptr<uint8_t>(), row.data_ptr<uint8_t>() + row.numel()),
                        parts_.device);
  } else {
    torch::manual_seed(io::mix_seed(cfg_.seed, static_cast<uint64_t>(rank) + 1, static_cast<uint64_t>(m.pos.step)));
  }
  // The data order is drawn from (seed, epoch, world, batch, reader): another one mid-epoch
  // draws the rest of the epoch afresh (a hostile finding: --seed 7 on resume trained 229 of
  // 900 samples twice and 229 not at all in that epoch, silently).
  std::vector<std::string> changed;
  if (m.world_size != world || m.batch_size != cfg_.batch_size)
    changed.push_back(fmt::format("{} ranks x batch {} -> {} x {}", m.world_size, m.batch_size, world, cfg_.batch_size));
  if (m.seed != cfg_.seed) changed.push_back(fmt::format("--train.seed {} -> {}", m.seed, cfg_.seed));
  if (!m.reader.empty() && m.reader != parts_.reader)
    changed.push_back(fmt::format("reader '{}' -> '{}'", m.reader, parts_.reader));
  std::string what;
  for (const auto& c : changed) what += (what.empty() ? "" : "; ") + c;
  if (!changed.empty() && m.pos.samples_done_in_epoch > 0 && !state->epoch_consumed(steps_per_epoch, global_batch))
    log::warn0(fmt::format("resuming in the middle of epoch {} with another data order ({}): the rest of the epoch is "
                           "drawn afresh, so some of its samples are trained twice and others not in this epoch; "
                           "the epochs after it are whole", m.pos.epoch + 1, what));
  else if (!changed.empty())
    log::info0("resuming with another data order (" + what + "): it restarts from (seed, epoch, rank)");
  // Options the checkpoint's weights were not trained with (a resubmission with an edited
  // config: another split, dropout, weight decay) trained on without a word; config.ini is
  // overwritten with the new ones, so train.log keeps this line as the record.
  try {
    if (const std::string c = config_changes(m.config_ini, cfg_.resolved_ini, /*resumed=*/true); !c.empty())
      log::warn0(fmt::format("resuming from step {} with options other than its checkpoint's ({}): the steps from "
                             "here train with them", m.pos.step, c));
  } catch (const Error& e) {
    log::warn0("cannot compare this job's options with those of " + path + ": " + e.what());
  }
  const int64_t epoch = state->pos().epoch;  // 0-based: the epoch the next step belongs to
  log::info0("resumed from " + path + " at step " + std::to_string(state->pos().step) +
             (epoch < cfg_.epochs ? " (epoch " + std::to_string(epoch + 1) + ")"
                                  : " (all " + std::to_string(cfg_.epochs) + " epochs trained)"));
}

// Rank 0, before any rank reads the directory: a resume from STEP abandons whatever of the
// run's history lies past it. LATER, and a best.ckpt chosen past STEP, are moved aside, not
// deleted (docs/checkpoints.md).
void Checkpointer::set_aside_later(std::vector<std::string> later, int64_t step) {
  const std::string dir = checkpoint_dir(cfg_);
  if (io::path_exists(best_path())) {
    try {
      if (meta_from_json(io::read_checkpoint_meta(best_path()), best_path()).pos.step > step) later.push_back(best_path());
    } catch (const Error&) {  // unreadable: read_best_standing names it
    }
  }
  if (later.empty()) return;
  std::string names;
  for (const auto& file : later) names += (names.empty() ? "" : ", ") + file.substr(file.find_last_of('/') + 1);
  const std::string into = io::set_aside_checkpoints(dir, step, later);
  log::warn0(fmt::format("resuming from step {}: the run's later checkpoints ({}) belong to the history this resume "
                         "abandons; moved to {}, nothing deleted", step, names, into));
}

void Checkpointer::read_best_standing() {
  const std::string best = best_path();
  if (!io::path_exists(best)) return;
  try {
    const CheckpointMeta b = meta_from_json(io::read_checkpoint_meta(best), best);
    if (b.best_metric != to_string(cfg_.best_metric)) return;  // another metric: the next validation replaces it
    // Scores of another split, or with and without --eval.hflip, do not compare: a best.ckpt
    // chosen on the val split could never be replaced by scores on the test split.
    if (const std::string change = validation_change(b, cfg_); !change.empty()) {
      log::warn0(best + " (step " + std::to_string(b.pos.step) + ") was " + change +
                 ": the scores do not compare, so the next validation replaces it");
      return;
    }
    best_value_ = lower_is_better(cfg_.best_metric) ? -b.best_value : b.best_value;
    best_step_ = b.pos.step;
  } catch (const Error& e) {
    log::warn("ignoring unreadable " + best + ": " + e.what());
  }
}

CheckpointMeta Checkpointer::meta_of(const TrainState& state) const {
  CheckpointMeta m;
  state.to_meta(&m);
  m.world_size = parts_.mpi.size();
  m.batch_size = cfg_.batch_size;
  m.seed = cfg_.seed;
  m.reader = parts_.reader;
  m.model = cfg_.model;
  m.model_width = cfg_.model_width;
  m.model_depth = cfg_.model_depth;
  m.optimizer = to_string(cfg_.optimizer);
  m.eval_hflip = cfg_.eval_hflip;
  m.val_split = cfg_.val_split;
  m.param_shapes = fnv1a64(param_shapes_text(parts_.model));
  m.dataset = spec_.name;
  m.data_source = data_.source;
  m.sample_shape = spec_.sample_shape;
  m.num_classes = spec_.num_classes;
  m.mean = spec_.mean;
  m.std = spec_.std;
  m.data_dtype = io::dtype_name(spec_.dtype);
  m.class_names = spec_.class_names;
  m.tokens = spec_.tokens;
  m.lockstep_version = lockstep_version();
  m.torch_version = torch_version();
  m.config_ini = cfg_.resolved_ini;
  return m;
}

std::function<std::string()> Checkpointer::snapshot(int64_t step) {
  const MpiRuntime& mpi = parts_.mpi;
  // Never a checkpoint of diverged weights: the NaN-loss rule sees a step's damage only in
  // the next step's loss, fp16's stall rule within LossScaler::kStalledSteps steps (a hostile
  // finding: fp16 checkpoints of NaN BatchNorm statistics). Collective: a rank's buffers
  // (BatchNorm's running statistics) may differ from rank 0's.
  const std::string bad = non_finite_state(parts_.model, &parts_.opt);
  double any_bad = bad.empty() ? 0.0 : 1.0;
  mpi.allreduce_max(&any_bad, 1);
  if (any_bad > 0)
    throw Error(fmt::format("step {}: {} holds a NaN or an infinity (training diverged), so no checkpoint is "
                            "written and {}; lower --train.lr, or try --train.clip-norm",
                            step, bad.empty() ? std::string("another rank's model") : bad,
                            last_saved_.step >= 0 ? fmt::format("the last one (step {}) is kept", last_saved_.step)
                                                  : std::string("there is none yet")));
  if (step != gathered_step_) {  // a collective: every rank decides alike, on the step
    gathered_rng_ = mpi.gather_bytes(rng_state_bytes(parts_.device), 0);
    gathered_step_ = step;
  }
  // Adam's host step counts from the device, where the step keeps them (step_counter.hpp): on
  // every rank, so that the ranks' optimizer states stay alike.
  parts_.counter.settle();
  if (mpi.rank() != 0) return [] { return std::string(); };
  std::shared_ptr<const StateSnapshot> state = shared_step_ == step ? shared_.lock() : nullptr;
  if (!state) {
    ExtraState extra;
    const int world = mpi.size();
    extra.rng = torch::from_blob(gathered_rng_.data(), {world, static_cast<int64_t>(gathered_rng_.size()) / world},
                                 torch::kUInt8)
                    .clone();
    if (parts_.scaler.enabled()) extra.amp_scaler = parts_.scaler.state();
    // The copies are queued here; the writer's thread serialises them (state_snapshot.hpp).
    state = std::make_shared<const StateSnapshot>(parts_.model, parts_.opt, extra);
    shared_ = state;
    shared_step_ = step;
  }
  return [state] { return state->serialize(); };
}

void Checkpointer::save(const TrainState& state) {
  const TrainPosition& at = state.pos();
  const TrainPosition& was = last_saved_;
  if (at.step == was.step && at.epoch == was.epoch && at.samples_done_in_epoch == was.samples_done_in_epoch)
    return;  // this position is saved (a stop right after a checkpoint); its epoch's end is not
  Recorder::Payload payload = snapshot(at.step);
  last_saved_ = at;
  rec_.write_checkpoint(state.pos().step, meta_to_json(meta_of(state)), std::move(payload), cfg_.keep_last);
}

void Checkpointer::update_best(const TrainState& state) {
  const BestMetric metric = cfg_.best_metric;
  const EvalResult& ev = state.last_eval();
  if (metric == BestMetric::kNone || ev.count == 0) return;
  const double v = signed_metric(ev, metric);
  // No score (a val_loss of no sample: CTC that aligned none) is never the best: taken as
  // one, nothing after it compared better, and its meta's null read back as 0.
  if (!std::isfinite(v)) return;
  if (best_step_ >= 0 && !(v > best_value_)) return;
  best_value_ = v;
  best_step_ = state.pos().step;
  best_weights_ = std::make_unique<HostCopies>();  // queued: the training thread does not wait for them
  for (const auto& t : parts_.model.state_tensors()) best_weights_->add(t.detach());
  best_weights_->seal();
  Recorder::Payload payload = snapshot(state.pos().step);
  CheckpointMeta m = meta_of(state);
  m.best_metric = to_string(metric);
  m.best_value = metric_value(ev, metric);  // as it is, not signed
  rec_.write_best(meta_to_json(m), std::move(payload));
  log::info0(std::string("best ") + to_string(metric) + " so far: " + fmt::format("{:.4f}", m.best_value) +
             " at step " + std::to_string(state.pos().step) + " -> " + best_path());
}

int64_t Checkpointer::restore_best() {
  if (best_step_ < 0) return -1;
  torch::NoGradGuard no_grad;
  if (best_weights_) {
    best_weights_->wait();
    const auto dst = parts_.model.state_tensors();
    const auto& src = best_weights_->tensors();
    LOCKSTEP_REQUIRE(dst.size() == src.size(), "best weights do not match the model");
    for (size_t i = 0; i < dst.size(); ++i) dst[i].copy_(src[i]);
    return best_step_;
  }
  // The best predates this process (a resumed run): best.ckpt is durable since then.
  const std::string path = best_path();
  const io::CheckpointData d = io::read_checkpoint(path);
  load_state(d.payload, parts_.model, nullptr, path);
  return best_step_;
}

}  // namespace lockstep
