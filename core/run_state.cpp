// run_state: see run_state.hpp.
#include "core/run_state.hpp"

#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/mpi_runtime.hpp"
#include "io/checkpoint_store.hpp"
#include "io/file_util.hpp"
#include "io/sample_order.hpp"

namespace lockstep {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string Times::summary(int64_t steps) const {
  const double per = 1000.0 / static_cast<double>(std::max<int64_t>(1, steps));
  const double total = std::max(seconds, 1e-9);
  const auto part = [&](const char* name, double s) {
    return std::string(name) + " " + fmt("%.1f", per * s) + " ms/step (" + fmt("%.1f", 100.0 * s / total) + "%)";
  };
  return part("data wait", data_wait) + ", " + part("forward", forward) + ", " + part("backward", backward) + ", " +
         part("exposed comm", exposed_comm) + ", " + part("optimizer", optimizer);
}

void open_run_dir(Run& r) {
  if (r.mpi.rank() != 0) return;
  io::make_dirs(r.cfg.run_dir);
  io::make_dirs(checkpoint_dir(r.cfg));
  io::write_file_atomic(r.cfg.run_dir + "/config.ini", r.cfg.resolved_ini);
  io::write_file_atomic(r.cfg.run_dir + "/command.txt", r.cfg.command_line + "\n");
  log::set_file(r.cfg.run_dir + "/train.log");
  r.metrics = std::make_unique<io::MetricsLog>(r.cfg.run_dir + "/metrics.jsonl");
  if (r.cfg.tensorboard) r.tb = std::make_unique<io::TbWriter>(r.cfg.run_dir + "/tb", r.mpi.host());
  r.writer = std::make_unique<CheckpointWriter>();
}

namespace {

CheckpointMeta make_meta(const Run& r) {
  CheckpointMeta m;
  m.pos = r.pos;
  m.world_size = r.mpi.size();
  m.batch_size = r.cfg.batch_size;
  m.seed = r.cfg.seed;
  m.model = r.cfg.model;
  m.model_width = r.cfg.model_width;
  m.model_depth = r.cfg.model_depth;
  m.dataset = r.manifest.spec.name;
  m.sample_shape = r.manifest.spec.sample_shape;
  m.num_classes = r.manifest.spec.num_classes;
  m.lockstep_version = lockstep_version();
  m.torch_version = torch_version();
  m.config_ini = r.cfg.resolved_ini;
  if (r.last_eval.count > 0) {
    m.val_acc = r.last_eval.accuracy;
    m.val_f1 = r.last_eval.macro_f1;
  }
  return m;
}

// Collective: gathers every rank's RNG state; rank 0 returns the serialised state (the
// host snapshot the writer thread then puts on disk), the others "".
std::string snapshot(Run& r) {
  const std::vector<uint8_t> all = r.mpi.gather_bytes(rng_state_bytes(r.place.device), 0);
  if (r.mpi.rank() != 0) return "";
  ExtraState extra;
  extra.rng = torch::from_blob(const_cast<uint8_t*>(all.data()), {r.mpi.size(), static_cast<int64_t>(all.size()) / r.mpi.size()},
                               torch::kUInt8).clone();
  if (r.scaler.enabled()) extra.amp_scaler = r.scaler.state();
  return serialize_state(*r.model, *r.opt, extra);
}

}  // namespace

void save_checkpoint(Run& r) {
  if (r.last_ckpt_step == r.pos.step) return;
  r.last_ckpt_step = r.pos.step;
  std::string payload = snapshot(r);
  if (r.mpi.rank() != 0) return;
  const auto t0 = Clock::now();
  const std::string dir = checkpoint_dir(r.cfg);
  const int64_t step = r.pos.step;
  const int keep = r.cfg.keep_last;
  r.writer->submit([dir, step, keep, meta = meta_to_json(make_meta(r)), payload = std::move(payload), t0] {
    const std::string path = io::write_checkpoint(dir, step, meta, payload);
    io::prune_checkpoints(dir, keep);
    log::info0("checkpoint " + path + " (" + fmt("%.1f", static_cast<double>(payload.size()) / 1e6) + " MB, " +
               fmt("%.2f", seconds_since(t0)) + " s, written in the background)");
  });
}

namespace {

// Larger is better for accuracy and F1, smaller for loss.
double metric_value(const EvalResult& ev, const std::string& metric) {
  if (metric == "val_acc") return ev.accuracy;
  if (metric == "val_loss") return -ev.loss;
  return ev.macro_f1;
}

}  // namespace

void update_best(Run& r) {
  const std::string& metric = r.cfg.best_metric;
  if (metric == "none" || r.last_eval.count == 0) return;
  const double v = metric_value(r.last_eval, metric);
  if (r.best_step >= 0 && !(v > r.best_value)) return;
  r.best_value = v;
  r.best_step = r.pos.step;
  std::string payload = snapshot(r);
  if (r.mpi.rank() != 0) return;
  CheckpointMeta m = make_meta(r);
  m.best_metric = metric;
  m.best_value = metric == "val_loss" ? -v : v;
  const std::string path = checkpoint_dir(r.cfg) + "/best.ckpt";
  r.writer->submit([path, meta = meta_to_json(m), payload = std::move(payload)] {
    io::write_checkpoint_file(path, meta, payload);
  });
  log::info0("best " + metric + " so far: " + fmt("%.4f", m.best_value) + " at step " + std::to_string(r.pos.step) +
             " -> " + path);
}

void finish_checkpoints(Run& r) {
  if (r.writer) r.writer->wait();
}

void resume_from(Run& r, const std::string& path) {
  const io::CheckpointData d = io::read_checkpoint(path);
  const CheckpointMeta m = meta_from_json(d.meta_json, path);
  LOCKSTEP_REQUIRE(m.model == r.cfg.model && m.sample_shape == r.manifest.spec.sample_shape &&
                       m.num_classes == r.manifest.spec.num_classes,
                   path + ": checkpoint is of model '" + m.model + "' on other data than this run's");
  ExtraState extra;
  load_state(d.payload, *r.model, r.opt.get(), path, &extra);
  r.pos = m.pos;
  r.last_ckpt_step = m.pos.step;
  if (m.val_acc >= 0) {
    r.last_eval.accuracy = m.val_acc;
    r.last_eval.macro_f1 = m.val_f1;
  }
  r.scaler.load_state(extra.amp_scaler);
  // Where the best checkpoint stands, so a resumed run only replaces it with a better one.
  const std::string best = checkpoint_dir(r.cfg) + "/best.ckpt";
  if (io::path_exists(best)) {
    try {
      const CheckpointMeta b = meta_from_json(io::read_checkpoint_meta(best), best);
      if (b.best_metric == r.cfg.best_metric) {
        r.best_value = b.best_metric == "val_loss" ? -b.best_value : b.best_value;
        r.best_step = b.pos.step;
      }
    } catch (const Error& e) {
      log::warn("ignoring unreadable " + best + ": " + e.what());
    }
  }
  // Generator states continue exactly on the same world size; on another one each rank
  // reseeds from (seed, rank, step) (docs/checkpoints.md).
  const bool same_world = m.world_size == r.mpi.size() && extra.rng.defined() && extra.rng.size(0) == r.mpi.size();
  if (same_world) {
    const torch::Tensor row = extra.rng[r.mpi.rank()].contiguous();
    set_rng_state_bytes(std::vector<uint8_t>(row.data_ptr<uint8_t>(), row.data_ptr<uint8_t>() + row.numel()),
                        r.place.device);
  } else {
    torch::manual_seed(io::mix_seed(r.cfg.seed, static_cast<uint64_t>(r.mpi.rank()) + 1,
                                    static_cast<uint64_t>(r.pos.step)));
  }
  // The data order is a function of (seed, epoch, rank); what carries over is how many
  // samples of the epoch were consumed, so a different world size or batch resumes at the
  // same fraction of the epoch (docs/checkpoints.md).
  const int64_t global_batch = r.cfg.batch_size * r.mpi.size() * r.cfg.grad_accum;
  if (r.pos.samples_done_in_epoch / global_batch >= r.steps_per_epoch) {
    ++r.pos.epoch;
    r.pos.samples_done_in_epoch = 0;
  }
  if (m.world_size != r.mpi.size() || m.batch_size != r.cfg.batch_size)
    log::info0("resuming a checkpoint of " + std::to_string(m.world_size) + " ranks x batch " +
               std::to_string(m.batch_size) + " on " + std::to_string(r.mpi.size()) + " ranks x batch " +
               std::to_string(r.cfg.batch_size) + ": data order and random streams restart from (seed, epoch, rank)");
  log::info0("resumed from " + path + " at step " + std::to_string(r.pos.step) + " (epoch " +
             std::to_string(r.pos.epoch + 1) + ")");
}

void write_row(Run& r, const char* kind, int64_t epoch, double train_loss, double train_acc, double samples_per_s,
               const Times& t, const EvalResult* ev) {
  if (r.mpi.rank() != 0) return;
  io::JsonObject row;
  row.add("kind", kind).add("epoch", epoch).add("step", r.pos.step).add("train_loss", train_loss);
  if (train_acc >= 0) row.add("train_acc", train_acc);
  if (ev && ev->count > 0) row.add("val_loss", ev->loss).add("val_acc", ev->accuracy).add("val_f1", ev->macro_f1);
  row.add("samples_per_s", samples_per_s).add("seconds", t.seconds).add("data_wait_s", t.data_wait)
      .add("forward_s", t.forward).add("backward_s", t.backward).add("exposed_comm_s", t.exposed_comm)
      .add("optimizer_s", t.optimizer).add("lr", r.lr);
  if (r.scaler.enabled()) row.add("loss_scale", r.scaler.current_scale()).add("skipped_steps", r.scaler.skipped());
  if (std::string(kind) == "end") {
    int64_t params = 0;
    for (const auto& p : r.model->parameters()) params += p.numel();
    row.add("world_size", r.mpi.size()).add("global_batch", r.cfg.batch_size * r.mpi.size() * r.cfg.grad_accum)
        .add("params", params).add("first_step_unix_ms", static_cast<int64_t>(r.first_step_unix * 1000));
  }
  if (r.cfg.clip_norm > 0)
    row.add("clipped_steps", r.clipped_steps.defined() ? r.clipped_steps.item<int64_t>() : int64_t{0});
  r.metrics->write(row);
  if (!r.tb) return;
  const std::string k = kind;
  if (k == "end") return;
  std::vector<std::pair<std::string, double>> s;
  if (k == "train") {
    s = {{"train/loss", train_loss}, {"train/acc", train_acc}, {"train/lr", r.lr}, {"train/samples_per_s", samples_per_s}};
  } else if (k == "epoch") {
    s = {{"epoch/train_loss", train_loss}, {"epoch/samples_per_s", samples_per_s},
         {"time/data_wait_s", t.data_wait}, {"time/forward_s", t.forward}, {"time/backward_s", t.backward},
         {"time/exposed_comm_s", t.exposed_comm}, {"time/optimizer_s", t.optimizer}};
  }
  if (ev && ev->count > 0) {
    s.emplace_back("val/loss", ev->loss);
    s.emplace_back("val/acc", ev->accuracy);
    s.emplace_back("val/macro_f1", ev->macro_f1);
  }
  if (!s.empty()) r.tb->scalars(r.pos.step, s);
}

}  // namespace lockstep
