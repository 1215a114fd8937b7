// session: see session.hpp.
#include "core/train/session.hpp"

#include <fmt/format.h>

#include <torch/torch.h>

#include <cmath>
#include <set>
#include <unordered_set>

#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/dist/tensor_sync.hpp"
#include "core/model/max_pool_layer.hpp"
#include "core/model/memory_format.hpp"
#include "core/model/onednn_guard.hpp"
#include "core/model/sync_bn.hpp"
#include "core/optim/optimizer.hpp"
#include "core/dist/preflight.hpp"
#include "core/dist/version_info.hpp"
#include "core/eval/mirror.hpp"
#include "core/data/reader_options.hpp"
#include "core/data/share_check.hpp"
#include "core/model/weights.hpp"
#include "core/train/checkpoint_state.hpp"
#include "core/train/fault_injection.hpp"
#include "core/train/model_init.hpp"
#include "core/train/plan_checks.hpp"
#include "core/train/weight_source.hpp"
#include "io/loader/shard_plan.hpp"

namespace lockstep {
namespace {

// The reader of an optional split: null when it is off (USE false) or absent (a line
// saying so: ROLE is skipped, HINT). A split named on purpose that the data lacks was refused
// by check_training_plan.
std::unique_ptr<io::RankReader> optional_split(const Session& s, bool use, const std::string& split, const char* role,
                                               const char* hint, const io::ReaderOptions& ropt) {
  if (!use) return nullptr;
  if (!s.manifest.has_split(split)) {
    log::info0(fmt::format("no '{}' split in {}: {} is skipped{}", split, s.cfg.data_dir, role, hint));
    return nullptr;
  }
  return std::make_unique<io::RankReader>(s.cfg.data_dir, s.manifest, split, s.mpi.rank(), s.mpi.size(), ropt);
}

// Each parameter's strides: the layout of its slot in the gradient buckets, which every
// rank must share (grad_reducer.hpp).
std::string param_layouts_text(Net& model) {
  std::string layouts;
  for (const auto& p : model.named_parameters()) layouts += p.key() + ":" + c10::str(p.value().strides()) + ";";
  return layouts;
}

}  // namespace

Session::Session(const Config& c, const MpiRuntime& m) : cfg(c), mpi(m) {
  if (cfg.progress != ProgressMode::kAuto) log::force_progress_bar(cfg.progress == ProgressMode::kBar);
  torch::set_num_threads(cfg.threads);
  // 1. data
  manifest = io::read_manifest(cfg.data_dir);
  check_training_plan(cfg, manifest);
  classes = manifest.spec.num_classes;
  global_batch = cfg.batch_size * mpi.size() * cfg.grad_accum;
  const auto& split = manifest.split(cfg.train_split, cfg.data_dir);
  const io::ReaderOptions ropt = reader_options(cfg);
  io::ReaderOptions train_opt = ropt;
  train_opt.redeal = true;  // a new share of the split every epoch (io/loader/rank_reader.hpp)
  train = std::make_unique<io::RankReader>(cfg.data_dir, manifest, cfg.train_split, mpi.rank(), mpi.size(), train_opt);
  steps_per_epoch = io::steps_per_epoch(io::shard_counts(split), mpi.size(), cfg.batch_size * cfg.grad_accum,
                                        cfg.remainder == Remainder::kWrap, train->dealt());
  if (!train->dealt())
    if (const std::string note = io::fixed_share_note(io::shard_counts(split), mpi.size(), cfg.batch_size * cfg.grad_accum,
                                                      cfg.remainder == Remainder::kWrap);
        !note.empty())
      log::warn0("the training reader keeps each rank's share of the split (--data.mode memory over "
                 "--data.memory-budget-mb): " + note + "; import with --shards a multiple of " +
                 std::to_string(mpi.size()) + ", or read with --data.mode stream, which deals a new equal share each epoch");
  check_rank_shares(*train, manifest, cfg.train_split, cfg.seed, 0, mpi);
  augment = augment_options(cfg);
  if (cfg.eval_hflip)
    log::info0("evaluation averages each sample's class probabilities with its mirror's (--eval.hflip): "
               "validation, best.ckpt and the test split see the mirrored-average prediction");
  val = optional_split(*this, cfg.use_val, cfg.val_split, "validation",
                       " (lockstep shard makes one with --val-fraction; --data.val-split test validates on the test "
                       "split, which then also selects best.ckpt)",
                       ropt);
  test = optional_split(*this, cfg.use_test, cfg.test_split, "the final test evaluation", "", ropt);
  // The test split by either name: --data.test-split none left validation on 'test' unsaid.
  if (val && (cfg.val_split == cfg.test_split || cfg.val_split == Config{}.test_split))
    log::warn0("validating on the test split '" + cfg.val_split + "' (--data.val-split): best.ckpt and every "
               "evaluation during training are chosen on test data, so a test score of these weights is optimistic");

  // 2. model, preflight, placement
  torch::manual_seed(cfg.seed);
  model = make_model(ModelOptions{cfg.model, cfg.dropout, cfg.model_width, cfg.model_depth, cfg.checkpoint_activations},
                     manifest.spec);
  inject_startup_fault(cfg, mpi.rank());  // --debug.fault stall-start, slow-start (tests)
  preflight_check(mpi, {{"resolved config", cfg.resolved_ini},
                        {"model parameters", param_shapes_text(*model)},
                        {"dataset manifest", io::manifest_to_json(manifest)},
                        {"lockstep version", lockstep_version()},
                        {"LibTorch version", torch_version()}});
  place = place_run(cfg, mpi);
  // Where every rank sits (shown at start); a rank whose CPUs are on another NUMA node than
  // its GPU is named once by rank 0 (lockstep doctor lists every rank).
  placements = gather_placements(mpi, probe_placement(mpi.rank(), mpi.host(),
                                                      place.device.is_cuda() ? place.device.index() : -1));
  int misplaced = 0;
  for (const auto& p : placements)
    if (const std::string m = numa_mismatch(p); !m.empty() && misplaced++ == 0) log::warn0(m);
  if (misplaced > 1) log::warn0(fmt::format("{} more rank(s) have their CPUs on another NUMA node than their GPU "
                                            "(lockstep doctor lists them)", misplaced - 1));
  // cuDNN's per-shape algorithm search pays off when shapes repeat; ragged sequences would
  // search again at every new length.
  cudnn_benchmark = place.device.is_cuda() && cfg.cudnn_benchmark && !manifest.spec.ragged;
  if (place.device.is_cuda()) at::globalContext().setBenchmarkCuDNN(cudnn_benchmark);
  if (cfg.amp != Amp::kNone && !place.device.is_cuda())
    log::info0(fmt::format("note: --train.amp {} on CPU runs through CPU autocast (slow; meant for GPUs)", to_string(cfg.amp)));
  if (const std::string why = keep_onednn_off_where_wrong(*model, place.device, cfg.amp); !why.empty())
    log::info0("note: " + why);
  init_weights(cfg, *model);
  std::string layout_note;
  if (wants_channels_last(cfg.memory_format, *model, cfg.model, place.device.is_cuda(), &layout_note))
    use_channels_last(*model);
  else if (!layout_note.empty())
    log::info0("note: " + layout_note);
  preflight_check(mpi, {{"model parameter layouts", param_layouts_text(*model)}});
  model->to(place.device);
  broadcast_tensors(model->state_tensors(), *place.comm);
  gpu_watch = watch_gpu(*model, manifest.spec, place.device, cfg);
  // auto stays off until bench/gpu.sh has measured the fused kernels on a GPU (docs/gpu.md).
  if (cfg.fused_bn == FusedBn::kOn) {
    // The fused pass takes channels-last activations, unsynchronised: say so where none are.
    const std::string unfused = !model->conv_net()        ? "it is not a conv net (cnn, resnet, c3d, r3d)"
                                : !model->channels_last() ? "its activations are not channels-last"
                                : cfg.sync_bn && mpi.size() > 1 ? "--model.sync-bn synchronises its BatchNorm layers"
                                                                : "";
    if (unfused.empty()) fused_bn_layers = set_fused_bn(*model, true);
    if (fused_bn_layers == 0)
      log::info0("note: --model.fused-bn on: nothing fuses in model '" + cfg.model + "': " +
                 (unfused.empty() ? std::string("it has no BatchNorm layers of lockstep's") : unfused));
    else if (!place.device.is_cuda())
      log::info0("note: --model.fused-bn on the CPU runs the CUDA kernels' steps as plain loops, several times slower "
                 "than ATen's BatchNorm (bench/bn_act_bench): it is meant for GPUs");
  }
  // auto is ATen's until bench/gpu.sh has measured lockstep's max-pool on a GPU (docs/gpu.md).
  if (cfg.max_pool == PoolKernel::kLockstep) {
    if (model->channels_last()) own_pool_layers = set_max_pool_kernel(*model, true);
    if (own_pool_layers == 0)
      log::info0("note: --model.max-pool lockstep: model '" + cfg.model + "' keeps ATen's: " +
                 (model->channels_last() ? "it has no max-pool layers of lockstep's"
                                         : "its activations are not channels-last"));
    else if (!place.device.is_cuda())
      log::info0("note: --model.max-pool lockstep on the CPU runs the CUDA kernels' rules as plain loops, slower "
                 "than ATen's max-pool (bench/bn_act_bench): it is meant for GPUs");
  }
  sync_bn_layers = use_sync_bn(cfg, *model, place.comm.get());
  if (cfg.sync_bn && sync_bn_layers == 0)
    log::info0("note: --model.sync-bn: model '" + cfg.model + "' has no BatchNorm layers: nothing to synchronise");

  // 3. optimisation
  const OptimizerOptions opt_options = optimizer_options(cfg, mpi.size());
  const double lr = opt_options.lr;
  trainable = trainable_params(*model, cfg.freeze);
  opt = make_optimizer(trainable, opt_options);
  step_counter = std::make_unique<StepCounter>(*opt);
  const WireType wire = cfg.compress == Compress::kBf16   ? WireType::kBF16
                        : cfg.compress == Compress::kFp16 ? WireType::kF16
                                                          : WireType::kF32;
  reducer = std::make_unique<GradReducer>(trainable, *place.comm, cfg.bucket_mb, place.overlap, wire,
                                          /*alone_pass_through=*/true);
  maker = std::make_unique<BatchMaker>(manifest.spec, place.device, place.device.is_cuda(), model->channels_last());
  const std::vector<int64_t> histogram = split.histogram(classes);
  const std::vector<double> weights = class_weights(cfg.class_weights, histogram);
  const double mean_weight = weights.empty() ? 1.0 : mean_class_weight(weights, histogram);
  if (!weights.empty())
    log::info0("class weights (" + cfg.class_weights + "), a batch's loss = sum of weight x loss / (batch x " +
               fmt::format("{:.4g}", mean_weight) + ", their mean over the training split):\n" +
               class_weight_table(weights, histogram, manifest.spec.class_names));
  loss = std::make_unique<Loss>(weights, mean_weight, cfg.label_smoothing, place.device);
  scaler = LossScaler(cfg.amp == Amp::kFp16, place.device, cfg.loss_scale, cfg.loss_scale_growth);
  const int64_t warmup = cfg.warmup_steps + std::llround(cfg.warmup_epochs * static_cast<double>(steps_per_epoch));
  schedule = LrSchedule{cfg.schedule, lr, warmup, /*total_steps: plan_from*/ 1, cfg.min_lr_fraction,
                        std::max<int64_t>(1, std::llround(cfg.step_epochs * static_cast<double>(steps_per_epoch))),
                        cfg.step_gamma};
  plan_from(TrainPosition{});  // a fresh run's; a resume plans again from its checkpoint
}

RunPlan plan_run(int64_t epochs, int64_t max_steps, int64_t steps_per_epoch, int64_t global_batch,
                 const TrainPosition& pos) {
  RunPlan p;
  // An epoch consumed in full (a checkpoint at its last step) resumes at its end, on any world.
  p.offset = pos.epoch * steps_per_epoch + std::min(pos.samples_done_in_epoch / global_batch, steps_per_epoch) - pos.step;
  const int64_t epochs_end = epochs * steps_per_epoch - p.offset;  // as a global step
  p.planned_steps = max_steps > 0 ? std::min<int64_t>(max_steps, epochs_end) : epochs_end;
  return p;
}

void Session::plan_from(const TrainPosition& pos, double last_lr) {
  const RunPlan p = plan_run(cfg.epochs, cfg.max_steps, steps_per_epoch, global_batch, pos);
  planned_steps = p.planned_steps;
  schedule.offset = p.offset;
  schedule.total_steps = planned_steps + p.offset;
  if (pos.step >= planned_steps) return;  // nothing left to train
  if (p.offset != 0)
    log::info0(fmt::format("the learning-rate schedule counts this run's steps of {} samples: the checkpoint's step "
                           "{} is its step {} (the run ends at step {})",
                           global_batch, pos.step, pos.step + p.offset, planned_steps));
  const std::string jump = lr_jump_note(schedule, pos, last_lr, mpi.size(), planned_steps);
  if (!jump.empty()) log::warn0(jump);
}

std::string lr_jump_note(const LrSchedule& schedule, const TrainPosition& pos, double last_lr, int world,
                         int64_t planned_steps) {
  if (last_lr < 0 || pos.step == 0 || pos.step >= planned_steps) return "";
  // This schedule's rate for the checkpoint's last step, give or take a step (another world
  // size maps steps onto its own), is the rate that step ran at, unless the schedule changed.
  // The rate may fall between two of this world's steps: within the range of three of them.
  double lo = INFINITY, hi = -INFINITY;
  for (int64_t d = -1; d <= 1; ++d) {
    const double r = schedule.at(std::max<int64_t>(0, pos.step - 1 + d));
    lo = std::min(lo, r), hi = std::max(hi, r);
  }
  const double slack = 1e-6 * std::abs(last_lr);
  if (last_lr >= lo - slack && last_lr <= hi + slack) return "";
  return fmt::format("the checkpoint's last step (step {}) ran at learning rate {:.6g}; this run's schedule gives "
                     "that step {:.6g} (--train.lr, its scaling for {} rank(s), the schedule, --train.epochs or "
                     "--train.max-steps differ), so the rate jumps: step {} runs at {:.6g} and the schedule ends at "
                     "step {}",
                     pos.step, last_lr, schedule.at(pos.step - 1), world, pos.step + 1, schedule.at(pos.step),
                     planned_steps);
}

Session::~Session() = default;  // the communicator's destructor aborts if close() was not reached

void Session::close() {
  reducer.reset();  // its hooks reference the parameters and the communicator
  if (place.comm) place.comm->destroy();
}

std::string Session::reader_text() const {
  return (train->streaming()    ? std::string("stream")
          : train->bucketing() ? fmt::format("memory, length-bucketed ({} batches per sorting window)", cfg.bucket_batches)
                               : std::string("memory")) +
         (train->dealt() ? ", a new share each epoch" : ", the same share each epoch");
}

std::string Session::reader_key() const {
  return (train->streaming()   ? std::string("stream")
          : train->bucketing() ? fmt::format("memory+buckets{}", cfg.bucket_batches)
                               : std::string("memory")) +
         (train->dealt() ? "/dealt" : "/fixed");
}

std::string Session::describe() const {
  const auto& split = manifest.split(cfg.train_split, cfg.data_dir);
  const auto split_text = [&](const io::RankReader* reader, const std::string& name, const char* when) {
    return reader ? fmt::format("'{}' ({} samples{})", name, manifest.split(name, cfg.data_dir).count(), when)
                  : std::string("none");
  };
  std::string sched = to_string(cfg.schedule);
  if (cfg.schedule == Schedule::kStep) sched += fmt::format(" x{:g} every {} steps", cfg.step_gamma, schedule.step_size);
  if (schedule.warmup_steps > 0) sched += fmt::format(", warmup {} steps", schedule.warmup_steps);
  std::string extras;
  if (cfg.weight_decay > 0) extras += fmt::format(", weight decay {:g}", cfg.weight_decay);
  if (cfg.clip_norm > 0) extras += fmt::format(", clip norm {:g}", cfg.clip_norm);
  if (cfg.label_smoothing > 0) extras += fmt::format(", label smoothing {:g}", cfg.label_smoothing);
  return fmt::format(
      "lockstep {} (torch {}): {} rank(s) on {} host(s), backend {}, device {}{}, {} thread(s)/rank{}\n"
      "data {} ({}): {} train samples in {} shard(s), reader {}; validation on {}, test on {}; model {} ({} parameters{}, "
      "{})\n"
      "batch {}/rank x world {} x accumulation {} = effective batch {}, {} steps/epoch ({} remainder)\n"
      "optimizer {}{}: lr {:g} x {} scaling for world {} = effective lr {:g} ({}){}{}",
      lockstep_version(), torch_version(), mpi.size(), mpi.node_count(), place.comm->name(), place.device.str(),
      cudnn_benchmark ? " (cudnn benchmark)" : "", cfg.threads,
      cfg.amp != Amp::kNone ? std::string(", amp ") + to_string(cfg.amp) : "",  //
      cfg.data_dir, manifest.spec.name, split.count(), split.shards.size(),
      reader_text(),
      split_text(val.get(), cfg.val_split, ""), split_text(test.get(), cfg.test_split, ", once at the end"), cfg.model,
      model->parameter_count(),
      (model->channels_last() ? std::string(", channels-last") : std::string()) +
          (sync_bn_layers > 0 ? fmt::format(", sync-bn over {} layer(s)", sync_bn_layers) : "") +
          (fused_bn_layers > 0 ? std::string(", BatchNorm+ReLU fused where they can be (--model.fused-bn on)") : "") +
          (own_pool_layers > 0 ? std::string(", lockstep's max-pool (--model.max-pool lockstep)") : ""),
      reducer->passes_through()
          ? std::string("gradients not reduced: one rank")
          : fmt::format("{} gradient bucket(s), reduced {} in {}: {:.2f} MB per step", reducer->buckets().size(),
                        place.overlap ? "during backward" : "after backward", wire_name(reducer->wire()),
                        static_cast<double>(reducer->wire_bytes_per_step()) / 1e6),  //
      cfg.batch_size, mpi.size(), cfg.grad_accum, global_batch, steps_per_epoch, to_string(cfg.remainder),  //
      to_string(cfg.optimizer), cfg.nesterov ? " (nesterov)" : "", cfg.lr, to_string(cfg.lr_scaling), mpi.size(),
      schedule.base, sched, extras, placement_text());
}

std::string Session::placement_text() const {
  constexpr size_t kShown = 64;  // a big job's start stays readable; lockstep doctor lists all
  const std::vector<std::string> lines = placement_lines(placements);
  std::string out = lines.empty() ? "" : "\nplacement:";
  for (size_t i = 0; i < lines.size() && i < kShown; ++i) out += "\n  " + lines[i];
  if (lines.size() > kShown) out += fmt::format("\n  ... and {} more rank(s) (lockstep doctor lists every rank)", lines.size() - kShown);
  return out;
}

void sync_buffers(Net& model, Communicator& comm, bool average) {
  const std::vector<at::Tensor> buffers = model.buffers();
  if (buffers.empty()) return;
  if (average)
    average_tensors(buffers, comm);
  else
    broadcast_tensors(buffers, comm);
}

}  // namespace lockstep
