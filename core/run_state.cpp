// run_state: see run_state.hpp.
#include "core/run_state.hpp"

#include <cstdio>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/mpi_runtime.hpp"
#include "io/checkpoint_store.hpp"
#include "io/file_util.hpp"

namespace lockstep {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

void open_run_dir(Run& r) {
  if (r.mpi.rank() != 0) return;
  io::make_dirs(r.cfg.run_dir);
  io::make_dirs(checkpoint_dir(r.cfg));
  io::write_file_atomic(r.cfg.run_dir + "/config.ini", r.cfg.resolved_ini);
  io::write_file_atomic(r.cfg.run_dir + "/command.txt", r.cfg.command_line + "\n");
  log::set_file(r.cfg.run_dir + "/train.log");
  r.metrics = std::make_unique<io::MetricsLog>(r.cfg.run_dir + "/metrics.jsonl");
}

void save_checkpoint(Run& r) {
  if (r.last_ckpt_step == r.pos.step) return;
  r.last_ckpt_step = r.pos.step;
  if (r.mpi.rank() != 0) return;  // parameters are identical on every rank
  CheckpointMeta m;
  m.pos = r.pos;
  m.world_size = r.mpi.size();
  m.batch_size = r.cfg.batch_size;
  m.seed = r.cfg.seed;
  m.model = r.cfg.model;
  m.dataset = r.manifest.spec.name;
  m.sample_shape = r.manifest.spec.sample_shape;
  m.num_classes = r.manifest.spec.num_classes;
  m.lockstep_version = lockstep_version();
  m.torch_version = torch_version();
  m.config_ini = r.cfg.resolved_ini;
  m.val_acc = r.last_val_acc;
  const auto t0 = Clock::now();
  const std::string path = io::write_checkpoint(checkpoint_dir(r.cfg), r.pos.step, meta_to_json(m),
                                                serialize_state(*r.model, *r.opt));
  io::prune_checkpoints(checkpoint_dir(r.cfg), r.cfg.keep_last);
  log::info0("checkpoint " + path + " (" + fmt("%.2f", seconds_since(t0)) + " s)");
}

void resume_from(Run& r, const std::string& path) {
  const io::CheckpointData d = io::read_checkpoint(path);
  const CheckpointMeta m = meta_from_json(d.meta_json, path);
  LOCKSTEP_REQUIRE(m.model == r.cfg.model && m.sample_shape == r.manifest.spec.sample_shape &&
                       m.num_classes == r.manifest.spec.num_classes,
                   path + ": checkpoint is of model '" + m.model + "' on other data than this run's");
  load_state(d.payload, *r.model, r.opt.get(), path);
  r.pos = m.pos;
  r.last_val_acc = m.val_acc;
  r.last_ckpt_step = m.pos.step;
  // The data order is a function of (seed, epoch, rank); what carries over is how many
  // samples of the epoch were consumed, so a different world size or batch resumes at the
  // same fraction of the epoch (docs/checkpoints.md).
  const int64_t global_batch = r.cfg.batch_size * r.mpi.size();
  if (r.pos.samples_done_in_epoch / global_batch >= r.steps_per_epoch) {
    ++r.pos.epoch;
    r.pos.samples_done_in_epoch = 0;
  }
  if (m.world_size != r.mpi.size() || m.batch_size != r.cfg.batch_size)
    log::info0("resuming a checkpoint of " + std::to_string(m.world_size) + " ranks x batch " +
               std::to_string(m.batch_size) + " on " + std::to_string(r.mpi.size()) + " ranks x batch " +
               std::to_string(r.cfg.batch_size));
  log::info0("resumed from " + path + " at step " + std::to_string(r.pos.step) + " (epoch " +
             std::to_string(r.pos.epoch + 1) + ")");
}

void write_row(Run& r, const char* kind, int64_t epoch, double train_loss, double samples_per_s, const Times& t,
               const EvalResult* ev) {
  if (r.mpi.rank() != 0) return;
  io::JsonObject row;
  row.add("kind", kind).add("epoch", epoch).add("step", r.pos.step).add("train_loss", train_loss);
  if (ev && ev->count > 0) row.add("val_loss", ev->loss).add("val_acc", ev->accuracy);
  row.add("samples_per_s", samples_per_s).add("seconds", t.seconds).add("data_wait_s", t.data_wait)
      .add("backward_s", t.backward).add("exposed_comm_s", t.exposed_comm).add("lr", r.lr);
  r.metrics->write(row);
}

}  // namespace lockstep
