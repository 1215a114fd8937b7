// trainer: see trainer.hpp.
#include "core/trainer.hpp"

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <thread>
#include <cstdio>
#include <optional>
#include <set>

#include "core/augment.hpp"
#include "core/batch.hpp"
#include "core/error.hpp"
#include "core/evaluator.hpp"
#include "core/grad_reducer.hpp"
#include "core/log.hpp"
#include "core/lr_schedule.hpp"
#include "core/mpi_runtime.hpp"
#include "core/preflight.hpp"
#include "core/run_setup.hpp"
#include "core/run_state.hpp"
#include "core/stop_signal.hpp"
#include "core/train_state.hpp"
#include "io/checkpoint_store.hpp"
#include "io/epoch_loader.hpp"
#include "io/file_util.hpp"
#include "io/metrics_log.hpp"
#include "io/sample_order.hpp"
#include "io/shard_plan.hpp"

namespace lockstep {
namespace {

std::vector<at::Tensor> params_and_buffers(Net& model) {
  std::vector<at::Tensor> all = model.parameters();
  for (const auto& b : model.buffers()) all.push_back(b);
  return all;
}

void setup(Run& r) {
  const Config& cfg = r.cfg;
  torch::set_num_threads(cfg.threads);
  r.manifest = io::read_manifest(cfg.data_dir);
  if (!r.manifest.spec.labeled)
    throw UsageError(cfg.data_dir + ": dataset '" + r.manifest.spec.name + "' has no labels; lockstep trains classifiers");
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

  torch::manual_seed(cfg.seed);
  r.model = make_model(cfg.model, r.manifest.spec, cfg.dropout);
  std::string shapes;
  for (const auto& p : r.model->named_parameters()) shapes += p.key() + ":" + c10::str(p.value().sizes()) + ";";
  preflight_check(r.mpi, {{"resolved config", cfg.resolved_ini},
                          {"model parameters", shapes},
                          {"dataset manifest", io::manifest_to_json(r.manifest)},
                          {"lockstep version", lockstep_version()},
                          {"LibTorch version", torch_version()}});
  r.place = place_run(cfg, r.mpi);
  r.model->to(r.place.device);
  broadcast_tensors(params_and_buffers(*r.model), *r.place.comm);
  r.opt = std::make_unique<torch::optim::SGD>(
      r.model->parameters(),
      torch::optim::SGDOptions(cfg.lr).momentum(cfg.momentum).weight_decay(cfg.weight_decay));
  r.reducer = std::make_unique<GradReducer>(r.model->parameters(), *r.place.comm, cfg.bucket_mb, r.place.overlap);
  r.maker = std::make_unique<BatchMaker>(r.manifest.spec, r.place.device);
  const int64_t planned = cfg.epochs * r.steps_per_epoch;
  r.schedule = LrSchedule{cfg.schedule, cfg.lr, cfg.warmup_steps,
                          cfg.max_steps > 0 ? std::min(cfg.max_steps, planned) : planned, cfg.min_lr_fraction};

  const std::string resume = agree_resume_path(cfg, r.mpi);
  if (!resume.empty()) resume_from(r, resume);
  // Dropout differs per rank and continues deterministically after a resume.
  torch::manual_seed(io::mix_seed(cfg.seed, static_cast<uint64_t>(r.mpi.rank()) + 1,
                                  static_cast<uint64_t>(r.pos.step)));
  open_run_dir(r);

  int64_t params = 0;
  for (const auto& p : r.model->parameters()) params += p.numel();
  const std::set<std::string> hosts(r.mpi.hosts().begin(), r.mpi.hosts().end());
  log::info0("lockstep " + lockstep_version() + " (torch " + torch_version() + "): " +
             std::to_string(r.mpi.size()) + " rank(s) on " + std::to_string(hosts.size()) +
             " host(s), backend " + r.place.comm->name() + ", device " + r.place.device.str() + ", " +
             std::to_string(cfg.threads) + " thread(s)/rank");
  log::info0("data " + cfg.data_dir + " (" + r.manifest.spec.name + "): " +
             std::to_string(split.count()) + " train samples in " + std::to_string(split.shards.size()) +
             " shard(s); model " + cfg.model + " (" + std::to_string(params) + " parameters, " +
             std::to_string(r.reducer->buckets().size()) + " gradient bucket(s), reduced " +
             (r.place.overlap ? "during backward" : "after backward") + ")");
  log::info0("batch " + std::to_string(cfg.batch_size) + "/rank x " + std::to_string(r.mpi.size()) + " ranks x " +
             std::to_string(cfg.grad_accum) + " micro-step(s) = " +
             std::to_string(cfg.batch_size * r.mpi.size() * cfg.grad_accum) + " per step, " +
             std::to_string(r.steps_per_epoch) + " steps/epoch (" + cfg.remainder + " remainder), reader " +
             (r.train->streaming() ? "stream" : "memory") + ", lr " + fmt("%g", cfg.lr) + " (" + cfg.schedule +
             (cfg.warmup_steps > 0 ? ", warmup " + std::to_string(cfg.warmup_steps) : std::string()) + ")");
}

EvalResult validate(Run& r) {
  if (!r.val) return EvalResult{};
  return evaluate(*r.model, *r.val, *r.maker, r.cfg.batch_size, r.cfg.prefetch, r.mpi);
}

// --debug.fault: what the no-hang tests make one rank do at one step.
void inject_fault(const Run& r) {
  const Config& c = r.cfg;
  if (c.fault == "none" || r.mpi.rank() != c.fault_rank || r.pos.step != c.fault_step) return;
  log::warn("injecting fault '" + c.fault + "' at step " + std::to_string(r.pos.step) + " (--debug.fault)");
  if (c.fault == "throw") throw Error("injected failure at step " + std::to_string(r.pos.step) + " (--debug.fault throw)");
  if (c.fault == "kill") std::raise(SIGKILL);
  std::this_thread::sleep_for(std::chrono::hours(1));  // stall: the other ranks' watchdogs end the job
}

void sync_buffers(Run& r) {
  if (r.cfg.sync_buffers) average_tensors(r.model->buffers(), *r.place.comm);
}

// A checkpoint in the middle of an epoch (--ckpt.every, a stop signal). Collective.
void checkpoint_now(Run& r) {
  sync_buffers(r);
  save_checkpoint(r);
}

}  // namespace

// LibTorch reports errors as c10::Error with a multi-line backtrace; lockstep reports one
// line per error, so torch errors are re-thrown as lockstep::Error without it.
template <typename F>
int with_torch_errors(F&& body) {
  try {
    return body();
  } catch (const c10::Error& e) {
    throw Error(std::string("LibTorch: ") + e.what_without_backtrace());
  }
}

int train_impl(const Config& cfg, const MpiRuntime& mpi) {
  Run r{cfg, mpi, {}};
  setup(r);
  const int64_t world = mpi.size(), batch = cfg.batch_size, accum = cfg.grad_accum,
                global_batch = batch * world * accum;
  if (r.pos.epoch >= cfg.epochs || (cfg.max_steps > 0 && r.pos.step >= cfg.max_steps)) {
    log::info0("nothing to do: the run is complete at step " + std::to_string(r.pos.step));
    return kExitOk;
  }
  stop_signal::install();
  const auto run_start = Clock::now();
  Times run_times;
  int64_t run_steps = 0;
  bool stop = false;
  // Loss sums stay on the device between log steps: no host sync in the step loop.
  const auto zero = [&] { return torch::zeros({}, torch::TensorOptions().device(r.place.device)); };

  for (; r.pos.epoch < cfg.epochs && !stop;) {
    const int64_t epoch = r.pos.epoch;
    const int64_t first_step = r.pos.samples_done_in_epoch / global_batch;
    // The loader's steps are micro-batches: ACCUM of them make one optimizer step.
    io::EpochLoader loader(*r.train, r.train->order(/*shuffle=*/true, cfg.seed, epoch), batch,
                           r.steps_per_epoch * accum, first_step * accum, cfg.prefetch);
    Times epoch_times, window_start;
    torch::Tensor window_loss = zero(), epoch_loss = zero();
    int64_t window_steps = 0;
    int64_t epoch_steps = 0;
    r.model->train();
    for (int64_t s = first_step; s < r.steps_per_epoch; ++s) {
      const auto t0 = Clock::now();
      inject_fault(r);
      r.lr = r.schedule.at(r.pos.step);
      for (auto& group : r.opt->param_groups())
        static_cast<torch::optim::SGDOptions&>(group.options()).lr(r.lr);
      r.opt->zero_grad();
      torch::Tensor step_loss = zero();
      for (int64_t a = 0; a < accum; ++a) {
        const int64_t micro = s * accum + a;
        const io::Batch* b = loader.next();
        LOCKSTEP_REQUIRE(b != nullptr && b->step == micro, "data loader ended before step " + std::to_string(s));
        torch::Tensor x = r.maker->inputs(b->samples.data(), batch);
        if (r.augment.enabled())
          x = augment_images(x, r.augment, io::mix_seed(cfg.seed, static_cast<uint64_t>(epoch),
                                                        static_cast<uint64_t>(micro), static_cast<uint64_t>(mpi.rank())));
        const torch::Tensor y = r.maker->labels(b->labels.data(), batch);
        const torch::Tensor loss = torch::nn::functional::cross_entropy(r.model->forward(x), y);
        r.reducer->prepare(/*sync=*/a == accum - 1);  // no communication on inner micro-steps
        const auto tb = Clock::now();
        (accum > 1 ? loss / static_cast<double>(accum) : loss).backward();
        epoch_times.backward += seconds_since(tb);
        step_loss += loss.detach();
      }
      r.reducer->finish();
      epoch_times.exposed_comm += r.reducer->exposed_seconds();
      r.opt->step();
      if (accum > 1) step_loss /= static_cast<double>(accum);
      window_loss += step_loss;
      epoch_loss += step_loss;
      epoch_times.seconds += seconds_since(t0);
      ++r.pos.step;
      ++epoch_steps;
      ++window_steps;
      r.pos.samples_done_in_epoch = (s + 1) * global_batch;
      if (r.pos.step % cfg.log_every == 0) {
        double window[2] = {window_loss.item<double>(), static_cast<double>(window_steps)};
        mpi.allreduce_sum(window, 2);
        const double mean = window[0] / window[1];
        if (!std::isfinite(mean))
          throw Error("training loss is " + fmt("%g", mean) + " at step " + std::to_string(r.pos.step) +
                      " (lower --train.lr?)");
        epoch_times.data_wait = loader.wait_seconds();
        const Times window_times = epoch_times - window_start;
        window_start = epoch_times;
        const double sps = window_times.samples_per_s(window_steps, global_batch);
        log::info0("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(cfg.epochs) + " step " +
                   std::to_string(s + 1) + "/" + std::to_string(r.steps_per_epoch) + " loss " +
                   fmt("%.4f", mean) + " " + fmt("%.0f", sps) + " samples/s, " + window_times.summary(window_steps));
        write_row(r, "train", epoch + 1, mean, sps, window_times, nullptr);
        window_loss.zero_();
        window_steps = 0;
      }
      if (cfg.ckpt_every > 0 && r.pos.step % cfg.ckpt_every == 0) checkpoint_now(r);
      if (cfg.max_steps > 0 && r.pos.step >= cfg.max_steps) {
        stop = true;
        break;
      }
      // Every rank learns at the same step boundary whether any rank was signalled.
      double signalled = stop_signal::pending();
      mpi.allreduce_max(&signalled, 1);
      if (signalled > 0) {
        log::info0("signal " + std::to_string(static_cast<int>(signalled)) + " received: checkpointing at step " +
                   std::to_string(r.pos.step) + " and exiting with code " + std::to_string(kExitResumable) +
                   " (resumable: --resume auto continues here)");
        checkpoint_now(r);
        return kExitResumable;
      }
    }
    epoch_times.data_wait = loader.wait_seconds();
    run_times += epoch_times;
    run_steps += epoch_steps;
    double epoch_sum[2] = {epoch_loss.item<double>(), static_cast<double>(epoch_steps)};
    mpi.allreduce_sum(epoch_sum, 2);
    const double mean_loss = epoch_sum[1] > 0 ? epoch_sum[0] / epoch_sum[1] : 0.0;
    const double sps = epoch_times.samples_per_s(epoch_steps, global_batch);
    sync_buffers(r);
    const EvalResult ev = validate(r);
    r.last_val_acc = ev.count > 0 ? ev.accuracy : -1.0;
    if (!stop) {
      log::info0("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(cfg.epochs) + " done: loss " +
                 fmt("%.4f", mean_loss) + " val_loss " + fmt("%.4f", ev.loss) + " val_acc " +
                 fmt("%.4f", ev.accuracy) + " " + fmt("%.0f", sps) + " samples/s " +
                 fmt("%.1f", epoch_times.seconds) + " s; " + epoch_times.summary(epoch_steps));
      write_row(r, "epoch", epoch + 1, mean_loss, sps, epoch_times, &ev);
      ++r.pos.epoch;
      r.pos.samples_done_in_epoch = 0;
    }
    save_checkpoint(r);
    if (stop || r.pos.epoch >= cfg.epochs) {
      const double total_sps = run_times.samples_per_s(run_steps, global_batch);
      log::info0("finished at step " + std::to_string(r.pos.step) + ": val_acc " + fmt("%.4f", ev.accuracy) +
                 " val_loss " + fmt("%.4f", ev.loss) + ", " + fmt("%.0f", total_sps) + " samples/s, " +
                 fmt("%.1f", seconds_since(run_start)) + " s wall; " + run_times.summary(run_steps));
      Times end_times = run_times;
      end_times.seconds = seconds_since(run_start);  // wall time of the whole run, evaluations included
      write_row(r, "end", epoch + 1, mean_loss, total_sps, end_times, &ev);
    }
  }
  return kExitOk;
}

int run_training(const Config& cfg, const MpiRuntime& mpi) {
  return with_torch_errors([&] { return train_impl(cfg, mpi); });
}

int evaluate_impl(const Config& cfg, const MpiRuntime& mpi) {
  const io::CheckpointData d = io::read_checkpoint(cfg.checkpoint);
  const CheckpointMeta meta = meta_from_json(d.meta_json, cfg.checkpoint);
  const io::Manifest manifest = io::read_manifest(cfg.data_dir);
  if (!manifest.spec.labeled)
    throw UsageError(cfg.data_dir + ": dataset '" + manifest.spec.name + "' has no labels to evaluate against");
  LOCKSTEP_REQUIRE(meta.sample_shape == manifest.spec.sample_shape && meta.num_classes == manifest.spec.num_classes,
                   cfg.checkpoint + ": trained on data of another shape or class count than " + cfg.data_dir);
  torch::set_num_threads(cfg.threads);
  const io::RankReader data(cfg.data_dir, manifest, cfg.val_split, mpi.rank(), mpi.size(),
                            io::ReaderOptions{cfg.data_mode, cfg.memory_budget_mb, cfg.block_samples, cfg.shuffle_blocks});
  Placement place = place_run(cfg, mpi);
  auto model = make_model(meta.model, manifest.spec, cfg.dropout);
  model->to(place.device);
  load_state(d.payload, *model, nullptr, cfg.checkpoint);
  const BatchMaker maker(manifest.spec, place.device);
  const auto t0 = Clock::now();
  const EvalResult ev = evaluate(*model, data, maker, cfg.batch_size, cfg.prefetch, mpi);
  log::info0("evaluate " + cfg.checkpoint + " (step " + std::to_string(meta.pos.step) + ") on " + cfg.data_dir +
             " split '" + cfg.val_split + "': accuracy " + fmt("%.4f", ev.accuracy) + " loss " + fmt("%.4f", ev.loss) +
             " over " + std::to_string(ev.count) + " samples, " + std::to_string(mpi.size()) + " rank(s), " +
             fmt("%.2f", seconds_since(t0)) + " s");
  return kExitOk;
}

int run_evaluation(const Config& cfg, const MpiRuntime& mpi) {
  return with_torch_errors([&] { return evaluate_impl(cfg, mpi); });
}

}  // namespace lockstep
