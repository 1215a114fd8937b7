// checkpointer: see checkpointer.hpp.
#include "core/train/checkpointer.hpp"

#include <fmt/format.h>

#include <torch/torch.h>

#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/dist/preflight.hpp"
#include "core/train/recorder.hpp"
#include "core/train/session.hpp"
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

Checkpointer::Checkpointer(Session& s, Recorder& rec) : s_(s), rec_(rec) {}

std::string Checkpointer::best_path() const { return checkpoint_dir(s_.cfg) + "/best.ckpt"; }

std::string Checkpointer::agree_resume_path() {
  const Config& cfg = s_.cfg;
  std::string path, problem;  // rank 0's reason to stop, shared so every rank fails the same way
  if (s_.mpi.rank() == 0) {
    const std::string dir = checkpoint_dir(cfg);
    if (cfg.resume == "auto") {
      std::vector<std::string> skipped;
      path = io::find_latest_valid_checkpoint(dir, &skipped);
      for (const auto& why : skipped) log::warn("skipping unusable checkpoint: " + why);
    } else if (cfg.resume == "none") {
      if (!io::list_checkpoints(dir).empty())
        problem = "--resume none, but " + dir + " already holds checkpoints; use --resume auto "
                  "to continue or another --run-dir (nothing was overwritten)";
    } else {
      path = cfg.resume;
      try {
        io::read_checkpoint(path);
      } catch (const Error& e) {
        problem = std::string("--resume ") + e.what();
      }
    }
  }
  problem = s_.mpi.broadcast_string(problem, 0);
  if (!problem.empty()) throw UsageError(problem);
  return s_.mpi.broadcast_string(path, 0);
}

void Checkpointer::resume(const std::string& path, RunProgress* p) {
  const io::CheckpointData d = io::read_checkpoint(path);
  const CheckpointMeta m = meta_from_json(d.meta_json, path);
  LOCKSTEP_REQUIRE(m.sample_shape == s_.manifest.spec.sample_shape && m.num_classes == s_.manifest.spec.num_classes,
                   path + ": checkpoint is of model '" + m.model + "' on other data than this run's (samples " +
                       io::shape_text(m.sample_shape) + ", " + std::to_string(m.num_classes) + " classes)");
  const std::string mismatch = resume_mismatch(m, s_.cfg, *s_.model, path);
  if (!mismatch.empty()) throw UsageError(mismatch);
  ExtraState extra;
  load_state(d.payload, *s_.model, s_.opt.get(), path, &extra);
  p->pos = m.pos;
  last_saved_step_ = m.pos.step;
  if (m.val_acc >= 0) {
    p->last_eval.accuracy = m.val_acc;
    p->last_eval.macro_f1 = m.val_f1;
  }
  if (m.val_cer >= 0) {
    p->last_eval.sequence = true;
    p->last_eval.cer = m.val_cer;
    p->last_eval.wer = m.val_wer;
  }
  p->epoch = m.epoch_stats.empty() ? WindowStats{} : WindowStats::from_json(m.epoch_stats, path);
  p->stopped_early = m.stopped_early;
  p->stop_rule = m.stop_rule;
  // Scores with and without --eval.hflip are not comparable (the mirror average scores
  // ~0.3 pp higher): a changed mode restarts the stop rule and the best checkpoint's race.
  const auto mode = [](bool hflip) { return hflip ? "with --eval.hflip" : "without --eval.hflip"; };
  if (m.eval_hflip != s_.cfg.eval_hflip && !p->stop_rule.empty()) {
    p->stop_rule.clear();
    log::info0(std::string("warning: ") + path + " was validated " + mode(m.eval_hflip) + ", this run validates " +
               mode(s_.cfg.eval_hflip) + ": early stopping and --train.stop-at start counting afresh");
  }
  s_.scaler.load_state(extra.amp_scaler);
  // Where the best checkpoint stands, so a resumed run only replaces it with a better one.
  const std::string best = best_path();
  if (io::path_exists(best)) {
    try {
      const CheckpointMeta b = meta_from_json(io::read_checkpoint_meta(best), best);
      if (b.best_metric == to_string(s_.cfg.best_metric)) {  // another metric: the next validation replaces it
        if (b.eval_hflip == s_.cfg.eval_hflip) {
          best_value_ = lower_is_better(s_.cfg.best_metric) ? -b.best_value : b.best_value;
          best_step_ = b.pos.step;
        } else {
          log::info0(std::string("warning: ") + best + " (step " + std::to_string(b.pos.step) + ") was chosen " +
                     mode(b.eval_hflip) + ", this run validates " + mode(s_.cfg.eval_hflip) +
                     ": the scores do not compare, so the next validation replaces it");
        }
      }
    } catch (const Error& e) {
      log::warn("ignoring unreadable " + best + ": " + e.what());
    }
  }
  // Generator states continue exactly on the same world size; on another one each rank
  // reseeds from (seed, rank, step) (docs/checkpoints.md).
  const int world = s_.mpi.size(), rank = s_.mpi.rank();
  if (m.world_size == world && extra.rng.defined() && extra.rng.size(0) == world) {
    const torch::Tensor row = extra.rng[rank].contiguous();
    set_rng_state_bytes(std::vector<uint8_t>(row.data_ptr<uint8_t>(), row.data_ptr<uint8_t>() + row.numel()),
                        s_.place.device);
  } else {
    torch::manual_seed(io::mix_seed(s_.cfg.seed, static_cast<uint64_t>(rank) + 1, static_cast<uint64_t>(p->pos.step)));
  }
  // The data order is a function of (seed, epoch, rank); what carries over is how many
  // samples of the epoch were consumed, so a different world size or batch resumes at the
  // same fraction of the epoch (docs/checkpoints.md).
  if (p->pos.samples_done_in_epoch / s_.global_batch >= s_.steps_per_epoch) {
    ++p->pos.epoch;
    p->pos.samples_done_in_epoch = 0;
    p->epoch = WindowStats{};
  }
  if (m.world_size != world || m.batch_size != s_.cfg.batch_size)
    log::info0("resuming a checkpoint of " + std::to_string(m.world_size) + " ranks x batch " +
               std::to_string(m.batch_size) + " on " + std::to_string(world) + " ranks x batch " +
               std::to_string(s_.cfg.batch_size) + ": data order and random streams restart from (seed, epoch, rank)");
  log::info0("resumed from " + path + " at step " + std::to_string(p->pos.step) + " (epoch " +
             std::to_string(p->pos.epoch + 1) + ")");
}

CheckpointMeta Checkpointer::meta_of(const RunProgress& p) const {
  const Config& cfg = s_.cfg;
  CheckpointMeta m;
  m.pos = p.pos;
  m.world_size = s_.mpi.size();
  m.batch_size = cfg.batch_size;
  m.seed = cfg.seed;
  m.model = cfg.model;
  m.model_width = cfg.model_width;
  m.model_depth = cfg.model_depth;
  m.optimizer = to_string(cfg.optimizer);
  m.eval_hflip = cfg.eval_hflip;
  m.param_shapes = fnv1a64(param_shapes_text(*s_.model));
  m.epoch_stats = p.epoch.to_json();
  m.stopped_early = p.stopped_early;
  m.stop_rule = p.stop_rule;
  m.dataset = s_.manifest.spec.name;
  m.sample_shape = s_.manifest.spec.sample_shape;
  m.num_classes = s_.manifest.spec.num_classes;
  m.mean = s_.manifest.spec.mean;
  m.std = s_.manifest.spec.std;
  m.class_names = s_.manifest.spec.class_names;
  m.tokens = s_.manifest.spec.tokens;
  m.lockstep_version = lockstep_version();
  m.torch_version = torch_version();
  m.config_ini = cfg.resolved_ini;
  if (p.last_eval.count > 0 && p.last_eval.sequence) {
    m.val_cer = p.last_eval.cer;
    m.val_wer = p.last_eval.wer;
  } else if (p.last_eval.count > 0) {
    m.val_acc = p.last_eval.accuracy;
    m.val_f1 = p.last_eval.macro_f1;
  }
  return m;
}

std::string Checkpointer::snapshot() {
  const std::vector<uint8_t> all = s_.mpi.gather_bytes(rng_state_bytes(s_.place.device), 0);
  if (s_.mpi.rank() != 0) return "";
  ExtraState extra;
  const int world = s_.mpi.size();
  extra.rng = torch::from_blob(const_cast<uint8_t*>(all.data()), {world, static_cast<int64_t>(all.size()) / world},
                               torch::kUInt8)
                  .clone();
  if (s_.scaler.enabled()) extra.amp_scaler = s_.scaler.state();
  return serialize_state(*s_.model, *s_.opt, extra);
}

void Checkpointer::save(const RunProgress& p) {
  if (last_saved_step_ == p.pos.step) return;
  last_saved_step_ = p.pos.step;
  std::string payload = snapshot();
  rec_.write_checkpoint(p.pos.step, meta_to_json(meta_of(p)), std::move(payload), s_.cfg.keep_last);
}

void Checkpointer::update_best(const RunProgress& p) {
  const BestMetric metric = s_.cfg.best_metric;
  if (metric == BestMetric::kNone || p.last_eval.count == 0) return;
  const double v = signed_metric(p.last_eval, metric);
  if (best_step_ >= 0 && !(v > best_value_)) return;
  best_value_ = v;
  best_step_ = p.pos.step;
  best_weights_.clear();
  for (const auto& t : s_.model->state_tensors()) best_weights_.push_back(t.detach().to(torch::TensorOptions().device(torch::kCPU), /*non_blocking=*/false, /*copy=*/true));
  std::string payload = snapshot();
  CheckpointMeta m = meta_of(p);
  m.best_metric = to_string(metric);
  m.best_value = metric_value(p.last_eval, metric);  // as it is, not signed
  rec_.write_best(meta_to_json(m), std::move(payload));
  log::info0(std::string("best ") + to_string(metric) + " so far: " + fmt::format("{:.4f}", m.best_value) + " at step " + std::to_string(p.pos.step) +
             " -> " + best_path());
}

int64_t Checkpointer::restore_best() {
  if (best_step_ < 0) return -1;
  torch::NoGradGuard no_grad;
  if (!best_weights_.empty()) {
    const auto dst = s_.model->state_tensors();
    LOCKSTEP_REQUIRE(dst.size() == best_weights_.size(), "best weights do not match the model");
    for (size_t i = 0; i < dst.size(); ++i) dst[i].copy_(best_weights_[i]);
    return best_step_;
  }
  // The best predates this process (a resumed run): best.ckpt is durable since then.
  const std::string path = best_path();
  const io::CheckpointData d = io::read_checkpoint(path);
  load_state(d.payload, *s_.model, nullptr, path);
  return best_step_;
}

}  // namespace lockstep
