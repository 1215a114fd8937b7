// run_build: see run_build.hpp.
#include "core/run_build.hpp"

#include <torch/torch.h>

#include <cmath>
#include <set>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/mpi_runtime.hpp"
#include "core/norm.hpp"
#include "core/optimizer.hpp"
#include "core/preflight.hpp"
#include "io/sample_order.hpp"
#include "io/shard_plan.hpp"

namespace lockstep {
namespace {

std::vector<at::Tensor> params_and_buffers(Net& model) {
  std::vector<at::Tensor> all = model.parameters();
  for (const auto& b : model.buffers()) all.push_back(b);
  return all;
}

void open_data(Run& r) {
  const Config& cfg = r.cfg;
  r.manifest = io::read_manifest(cfg.data_dir);
  if (!r.manifest.spec.labeled)
    throw UsageError(cfg.data_dir + ": dataset '" + r.manifest.spec.name + "' has no labels; lockstep trains classifiers");
  r.classes = r.manifest.spec.num_classes;
  const auto& split = r.manifest.split(cfg.train_split, cfg.data_dir);
  r.steps_per_epoch = io::steps_per_epoch(io::shard_counts(split), r.mpi.size(), cfg.batch_size * cfg.grad_accum,
                                          cfg.remainder == "wrap");
  const io::ReaderOptions ropt{cfg.data_mode, cfg.memory_budget_mb, cfg.block_samples, cfg.shuffle_blocks};
  r.train = std::make_unique<io::RankReader>(cfg.data_dir, r.manifest, cfg.train_split, r.mpi.rank(), r.mpi.size(), ropt);
  r.augment = AugmentOptions{cfg.random_crop, cfg.hflip};
  if (r.manifest.has_split(cfg.val_split))
    r.val = std::make_unique<io::RankReader>(cfg.data_dir, r.manifest, cfg.val_split, r.mpi.rank(), r.mpi.size(), ropt);
  else
    log::info0("no '" + cfg.val_split + "' split in " + cfg.data_dir + ": validation is skipped");
}

void build_training(Run& r) {
  const Config& cfg = r.cfg;
  torch::manual_seed(cfg.seed);
  r.model = make_model(ModelOptions{cfg.model, cfg.dropout, cfg.model_width, cfg.model_depth}, r.manifest.spec);
  std::string shapes;
  for (const auto& p : r.model->named_parameters()) shapes += p.key() + ":" + c10::str(p.value().sizes()) + ";";
  preflight_check(r.mpi, {{"resolved config", cfg.resolved_ini},
                          {"model parameters", shapes},
                          {"dataset manifest", io::manifest_to_json(r.manifest)},
                          {"lockstep version", lockstep_version()},
                          {"LibTorch version", torch_version()}});
  r.place = place_run(cfg, r.mpi);
  if (cfg.amp != "none" && !r.place.device.is_cuda())
    log::info0("note: --train.amp " + cfg.amp + " on CPU runs through CPU autocast (slow; meant for GPUs)");
  r.model->to(r.place.device);
  broadcast_tensors(params_and_buffers(*r.model), *r.place.comm);
  if (cfg.sync_bn) {
    const int layers = set_sync_bn(*r.model, r.place.comm.get());
    if (layers == 0) log::info0("note: --model.sync-bn: model '" + cfg.model + "' has no lockstep BatchNorm layers");
  }
  const double lr = scaled_lr(cfg.lr, cfg.lr_scaling, r.mpi.size());
  r.opt = make_optimizer(r.model->parameters(), OptimizerOptions{cfg.optimizer, lr, cfg.momentum, cfg.nesterov,
                                                                  cfg.weight_decay, cfg.beta1, cfg.beta2, 1e-8});
  r.reducer = std::make_unique<GradReducer>(r.model->parameters(), *r.place.comm, cfg.bucket_mb, r.place.overlap);
  r.maker = std::make_unique<BatchMaker>(r.manifest.spec, r.place.device);
  const auto& split = r.manifest.split(cfg.train_split, cfg.data_dir);
  const std::vector<int64_t> histogram = split.histogram(r.classes);
  const std::vector<double> weights = class_weights(cfg.class_weights, histogram);
  if (!weights.empty())
    log::info0("class weights (" + cfg.class_weights + "):\n" +
               class_weight_table(weights, histogram, r.manifest.spec.class_names));
  r.loss = std::make_unique<Loss>(weights, cfg.label_smoothing, r.place.device);
  r.scaler = LossScaler(cfg.amp == "fp16");
  const int64_t planned = cfg.epochs * r.steps_per_epoch;
  const int64_t warmup = cfg.warmup_steps + std::llround(cfg.warmup_epochs * static_cast<double>(r.steps_per_epoch));
  r.schedule = LrSchedule{cfg.schedule, lr, warmup, cfg.max_steps > 0 ? std::min(cfg.max_steps, planned) : planned,
                          cfg.min_lr_fraction,
                          std::max<int64_t>(1, std::llround(cfg.step_epochs * static_cast<double>(r.steps_per_epoch))),
                          cfg.step_gamma};
}

void print_start(const Run& r) {
  const Config& cfg = r.cfg;
  int64_t params = 0;
  for (const auto& p : r.model->parameters()) params += p.numel();
  const std::set<std::string> hosts(r.mpi.hosts().begin(), r.mpi.hosts().end());
  const auto& split = r.manifest.split(cfg.train_split, cfg.data_dir);
  const int64_t world = r.mpi.size();
  log::info0("lockstep " + lockstep_version() + " (torch " + torch_version() + "): " + std::to_string(world) +
             " rank(s) on " + std::to_string(hosts.size()) + " host(s), backend " + r.place.comm->name() +
             ", device " + r.place.device.str() + ", " + std::to_string(cfg.threads) + " thread(s)/rank" +
             (cfg.amp != "none" ? ", amp " + cfg.amp : std::string()));
  log::info0("data " + cfg.data_dir + " (" + r.manifest.spec.name + "): " + std::to_string(split.count()) +
             " train samples in " + std::to_string(split.shards.size()) + " shard(s), reader " +
             (r.train->streaming() ? "stream" : "memory") + "; model " + cfg.model + " (" + std::to_string(params) +
             " parameters" + (cfg.sync_bn ? ", sync-bn" : "") + ", " + std::to_string(r.reducer->buckets().size()) +
             " gradient bucket(s), reduced " + (r.place.overlap ? "during backward" : "after backward") + ")");
  log::info0("batch " + std::to_string(cfg.batch_size) + "/rank x world " + std::to_string(world) + " x accumulation " +
             std::to_string(cfg.grad_accum) + " = effective batch " +
             std::to_string(cfg.batch_size * world * cfg.grad_accum) + ", " + std::to_string(r.steps_per_epoch) +
             " steps/epoch (" + cfg.remainder + " remainder)");
  std::string sched = cfg.schedule;
  if (cfg.schedule == "step")
    sched += " x" + fmt("%g", cfg.step_gamma) + " every " + std::to_string(r.schedule.step_size) + " steps";
  if (r.schedule.warmup_steps > 0) sched += ", warmup " + std::to_string(r.schedule.warmup_steps) + " steps";
  log::info0("optimizer " + cfg.optimizer + (cfg.nesterov ? " (nesterov)" : "") + ": lr " + fmt("%g", cfg.lr) +
             " x " + cfg.lr_scaling + " scaling for world " + std::to_string(world) + " = effective lr " +
             fmt("%g", r.schedule.base) + " (" + sched + ")" +
             (cfg.weight_decay > 0 ? ", weight decay " + fmt("%g", cfg.weight_decay) : std::string()) +
             (cfg.clip_norm > 0 ? ", clip norm " + fmt("%g", cfg.clip_norm) : std::string()) +
             (cfg.label_smoothing > 0 ? ", label smoothing " + fmt("%g", cfg.label_smoothing) : std::string()));
}

}  // namespace

void build_run(Run& r) {
  log::set_progress(r.cfg.progress);
  torch::set_num_threads(r.cfg.threads);
  open_data(r);
  build_training(r);
  const std::string resume = agree_resume_path(r.cfg, r.mpi);
  // Dropout differs per rank; a fresh start (or a resume on another world size) seeds it
  // from (seed, rank, step). A resume on the same world size restores the saved states.
  torch::manual_seed(io::mix_seed(r.cfg.seed, static_cast<uint64_t>(r.mpi.rank()) + 1, 0));
  if (!resume.empty()) resume_from(r, resume);
  open_run_dir(r);
  print_start(r);
}

}  // namespace lockstep
