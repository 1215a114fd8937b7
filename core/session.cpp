// session: see session.hpp.
#include "core/session.hpp"

#include <torch/torch.h>

#include <cmath>
#include <set>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/mpi_runtime.hpp"
#include "core/norm.hpp"
#include "core/optimizer.hpp"
#include "core/preflight.hpp"
#include "core/train_state.hpp"
#include "io/shard_plan.hpp"

namespace lockstep {
namespace {

std::vector<at::Tensor> params_and_buffers(Net& model) {
  std::vector<at::Tensor> all = model.parameters();
  for (const auto& b : model.buffers()) all.push_back(b);
  return all;
}

// The reader of an optional split: null (and a line saying so) when it is off or absent.
std::unique_ptr<io::RankReader> optional_split(const Session& s, const std::string& split, const char* role,
                                               const io::ReaderOptions& ropt) {
  if (split == "none") return nullptr;
  if (!s.manifest.has_split(split)) {
    log::info0(std::string("no '") + split + "' split in " + s.cfg.data_dir + ": " + role +
               (std::string(role) == "validation"
                    ? " is skipped (lockstep shard makes one with --val-fraction; --data.val-split test validates "
                      "on the test split, which then also selects best.ckpt)"
                    : " is skipped"));
    return nullptr;
  }
  return std::make_unique<io::RankReader>(s.cfg.data_dir, s.manifest, split, s.mpi.rank(), s.mpi.size(), ropt);
}

// BatchNorm layers lockstep cannot synchronise (a TorchScript module's own) next to the
// ones it can: --model.sync-bn must not claim what it does not do.
int foreign_batchnorms(Net& model, int synced) {
  int running_means = 0;
  for (const auto& b : model.named_buffers()) {
    const std::string& name = b.key();
    if (name.size() >= 12 && name.compare(name.size() - 12, 12, "running_mean") == 0) ++running_means;
  }
  return running_means - synced;
}

}  // namespace

Session::Session(const Config& c, const MpiRuntime& m) : cfg(c), mpi(m) {
  log::set_progress(cfg.progress);
  torch::set_num_threads(cfg.threads);
  // 1. data
  manifest = io::read_manifest(cfg.data_dir);
  if (!manifest.spec.labeled)
    throw UsageError(cfg.data_dir + ": dataset '" + manifest.spec.name + "' has no labels; lockstep trains classifiers");
  classes = manifest.spec.num_classes;
  global_batch = cfg.batch_size * mpi.size() * cfg.grad_accum;
  const auto& split = manifest.split(cfg.train_split, cfg.data_dir);
  steps_per_epoch = io::steps_per_epoch(io::shard_counts(split), mpi.size(), cfg.batch_size * cfg.grad_accum,
                                        cfg.remainder == "wrap");
  planned_steps = cfg.max_steps > 0 ? std::min<int64_t>(cfg.max_steps, cfg.epochs * steps_per_epoch)
                                    : cfg.epochs * steps_per_epoch;
  const io::ReaderOptions ropt{cfg.data_mode, cfg.memory_budget_mb, cfg.block_samples, cfg.shuffle_blocks};
  train = std::make_unique<io::RankReader>(cfg.data_dir, manifest, cfg.train_split, mpi.rank(), mpi.size(), ropt);
  augment = AugmentOptions{cfg.random_crop, cfg.hflip};
  val = optional_split(*this, cfg.val_split, "validation", ropt);
  test = optional_split(*this, cfg.test_split, "the final test evaluation", ropt);
  if (val && cfg.val_split == cfg.test_split)
    log::info0("warning: validating on the test split '" + cfg.val_split + "' (--data.val-split): best.ckpt and every "
              "evaluation during training are chosen on test data, so the test accuracy reported is optimistic");

  // 2. model, preflight, placement
  torch::manual_seed(cfg.seed);
  model = make_model(ModelOptions{cfg.model, cfg.dropout, cfg.model_width, cfg.model_depth}, manifest.spec);
  preflight_check(mpi, {{"resolved config", cfg.resolved_ini},
                        {"model parameters", param_shapes_text(*model)},
                        {"dataset manifest", io::manifest_to_json(manifest)},
                        {"lockstep version", lockstep_version()},
                        {"LibTorch version", torch_version()}});
  place = place_run(cfg, mpi);
  if (cfg.amp != "none" && !place.device.is_cuda())
    log::info0("note: --train.amp " + cfg.amp + " on CPU runs through CPU autocast (slow; meant for GPUs)");
  model->to(place.device);
  broadcast_tensors(params_and_buffers(*model), *place.comm);
  if (cfg.sync_bn) {
    sync_bn_layers = set_sync_bn(*model, place.comm.get());
    const int foreign = foreign_batchnorms(*model, sync_bn_layers);
    if (foreign > 0)
      throw UsageError("--model.sync-bn: model '" + cfg.model + "' has " + std::to_string(foreign) +
                       " BatchNorm layer(s) lockstep cannot synchronise (a TorchScript module's own); "
                       "drop --model.sync-bn or use a built-in model");
    if (sync_bn_layers == 0)
      log::info0("note: --model.sync-bn: model '" + cfg.model + "' has no BatchNorm layers: nothing to synchronise");
  }

  // 3. optimisation
  const double lr = scaled_lr(cfg.lr, cfg.lr_scaling, mpi.size());
  opt = make_optimizer(model->parameters(), OptimizerOptions{cfg.optimizer, lr, cfg.momentum, cfg.nesterov,
                                                             cfg.weight_decay, cfg.beta1, cfg.beta2, 1e-8});
  reducer = std::make_unique<GradReducer>(model->parameters(), *place.comm, cfg.bucket_mb, place.overlap);
  maker = std::make_unique<BatchMaker>(manifest.spec, place.device);
  const std::vector<int64_t> histogram = split.histogram(classes);
  const std::vector<double> weights = class_weights(cfg.class_weights, histogram);
  if (!weights.empty())
    log::info0("class weights (" + cfg.class_weights + "):\n" +
               class_weight_table(weights, histogram, manifest.spec.class_names));
  loss = std::make_unique<Loss>(weights, cfg.label_smoothing, place.device);
  scaler = LossScaler(cfg.amp == "fp16");
  const int64_t warmup = cfg.warmup_steps + std::llround(cfg.warmup_epochs * static_cast<double>(steps_per_epoch));
  schedule = LrSchedule{cfg.schedule, lr, warmup, planned_steps, cfg.min_lr_fraction,
                        std::max<int64_t>(1, std::llround(cfg.step_epochs * static_cast<double>(steps_per_epoch))),
                        cfg.step_gamma};
}

Session::~Session() = default;  // the communicator's destructor aborts if close() was not reached

void Session::close() {
  reducer.reset();  // its hooks reference the parameters and the communicator
  if (place.comm) place.comm->destroy();
}

int64_t Session::parameter_count() const {
  int64_t params = 0;
  for (const auto& p : model->parameters()) params += p.numel();
  return params;
}

std::string Session::describe() const {
  const std::set<std::string> hosts(mpi.hosts().begin(), mpi.hosts().end());
  const auto& split = manifest.split(cfg.train_split, cfg.data_dir);
  const int64_t world = mpi.size();
  std::string out = "lockstep " + lockstep_version() + " (torch " + torch_version() + "): " + std::to_string(world) +
                    " rank(s) on " + std::to_string(hosts.size()) + " host(s), backend " + place.comm->name() +
                    ", device " + place.device.str() + ", " + std::to_string(cfg.threads) + " thread(s)/rank" +
                    (cfg.amp != "none" ? ", amp " + cfg.amp : std::string());
  out += "\ndata " + cfg.data_dir + " (" + manifest.spec.name + "): " + std::to_string(split.count()) +
         " train samples in " + std::to_string(split.shards.size()) + " shard(s), reader " +
         (train->streaming() ? "stream" : "memory") + "; validation on " +
         (val ? "'" + cfg.val_split + "' (" + std::to_string(manifest.split(cfg.val_split, cfg.data_dir).count()) + " samples)"
              : std::string("none")) +
         ", test on " +
         (test ? "'" + cfg.test_split + "' (" + std::to_string(manifest.split(cfg.test_split, cfg.data_dir).count()) +
                     " samples, once at the end)"
               : std::string("none")) +
         "; model " + cfg.model + " (" + std::to_string(parameter_count()) + " parameters" +
         (sync_bn_layers > 0 ? ", sync-bn over " + std::to_string(sync_bn_layers) + " layer(s)" : "") + ", " +
         std::to_string(reducer->buckets().size()) + " gradient bucket(s), reduced " +
         (place.overlap ? "during backward" : "after backward") + ")";
  out += "\nbatch " + std::to_string(cfg.batch_size) + "/rank x world " + std::to_string(world) + " x accumulation " +
         std::to_string(cfg.grad_accum) + " = effective batch " + std::to_string(global_batch) + ", " +
         std::to_string(steps_per_epoch) + " steps/epoch (" + cfg.remainder + " remainder)";
  std::string sched = cfg.schedule;
  if (cfg.schedule == "step")
    sched += " x" + fmt("%g", cfg.step_gamma) + " every " + std::to_string(schedule.step_size) + " steps";
  if (schedule.warmup_steps > 0) sched += ", warmup " + std::to_string(schedule.warmup_steps) + " steps";
  out += "\noptimizer " + cfg.optimizer + (cfg.nesterov ? " (nesterov)" : "") + ": lr " + fmt("%g", cfg.lr) + " x " +
         cfg.lr_scaling + " scaling for world " + std::to_string(world) + " = effective lr " + fmt("%g", schedule.base) +
         " (" + sched + ")" + (cfg.weight_decay > 0 ? ", weight decay " + fmt("%g", cfg.weight_decay) : std::string()) +
         (cfg.clip_norm > 0 ? ", clip norm " + fmt("%g", cfg.clip_norm) : std::string()) +
         (cfg.label_smoothing > 0 ? ", label smoothing " + fmt("%g", cfg.label_smoothing) : std::string());
  return out;
}

void sync_buffers(Session& s) {
  const std::vector<at::Tensor> buffers = s.model->buffers();
  if (buffers.empty()) return;
  if (s.cfg.sync_buffers)
    average_tensors(buffers, *s.place.comm);
  else
    broadcast_tensors(buffers, *s.place.comm);
}

}  // namespace lockstep
