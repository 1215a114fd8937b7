// trainer: see trainer.hpp.
#include "core/trainer.hpp"

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <thread>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/mpi_runtime.hpp"
#include "core/optimizer.hpp"
#include "core/run_build.hpp"
#include "core/run_report.hpp"
#include "core/run_state.hpp"
#include "core/stop_signal.hpp"
#include "core/torch_errors.hpp"
#include "io/epoch_loader.hpp"
#include "io/sample_order.hpp"

namespace lockstep {
namespace {

// --debug.fault: what the no-hang tests make one rank do at one step.
void inject_fault(const Run& r) {
  const Config& c = r.cfg;
  if (c.fault == "none" || r.mpi.rank() != c.fault_rank || r.pos.step != c.fault_step) return;
  log::warn("injecting fault '" + c.fault + "' at step " + std::to_string(r.pos.step) + " (--debug.fault)");
  if (c.fault == "throw") throw Error("injected failure at step " + std::to_string(r.pos.step) + " (--debug.fault throw)");
  if (c.fault == "kill") std::raise(SIGKILL);
  std::this_thread::sleep_for(std::chrono::hours(1));  // stall: the other ranks' watchdogs end the job
}

// BatchNorm running statistics drift apart per rank (each sees its own batches). Before
// an evaluation or a checkpoint every rank takes rank 0's (what DDP's broadcast_buffers
// does every step) or, with --dist.sync-buffers, the average: evaluation then computes the
// function the checkpoint holds, on every rank. Collective.
void sync_buffers(Run& r) {
  const std::vector<at::Tensor> buffers = r.model->buffers();
  if (buffers.empty()) return;
  if (r.cfg.sync_buffers)
    average_tensors(buffers, *r.place.comm);
  else
    broadcast_tensors(buffers, *r.place.comm);
}

EvalResult validate(Run& r) {
  if (!r.val) return EvalResult{};
  sync_buffers(r);
  EvalResult ev = evaluate(*r.model, *r.val, *r.maker, r.cfg.batch_size, r.cfg.prefetch, r.classes, r.mpi);
  r.last_eval = ev;
  r.last_eval_step = r.pos.step;
  return ev;
}

// The steps since the last log line: per-step losses and correct counts stay on the
// device (no host sync in the step loop) until the window is checked.
struct Window {
  std::vector<torch::Tensor> losses, correct;
  int64_t first_step = 0;  // global step of losses[0]
  Times start;
  bool empty() const { return losses.empty(); }
};

struct WindowStats {
  double loss = 0, acc = 0;
  int64_t steps = 0;
};

// Collective. Means over all ranks; a non-finite loss (outside fp16 AMP, whose scaler
// skips such steps) ends the run naming the first step that had it.
WindowStats close_window(Run& r, Window& w) {
  WindowStats out;
  out.steps = static_cast<int64_t>(w.losses.size());
  std::vector<double> v(w.losses.size() + 1, 0.0);  // per-step loss sums, then the correct count
  if (!w.empty()) {
    const torch::Tensor l = torch::stack(w.losses).to(torch::kCPU, torch::kDouble).contiguous();
    std::copy(l.data_ptr<double>(), l.data_ptr<double>() + l.numel(), v.begin());
    v.back() = torch::stack(w.correct).sum().item<double>();
  }
  r.mpi.allreduce_sum(v.data(), static_cast<int>(v.size()));
  const double world = r.mpi.size();
  double sum = 0.0;
  int64_t finite_steps = 0;
  for (size_t i = 0; i + 1 < v.size(); ++i) {
    if (!std::isfinite(v[i])) {
      if (r.cfg.amp == "fp16") continue;
      throw Error("training loss is " + fmt("%g", v[i] / world) + " at step " +
                  std::to_string(w.first_step + static_cast<int64_t>(i) + 1) + " (lr " + fmt("%g", r.lr) +
                  "; lower --train.lr, or try --train.clip-norm)");
    }
    sum += v[i];
    ++finite_steps;
  }
  out.loss = finite_steps > 0 ? sum / world / static_cast<double>(finite_steps) : std::nan("");
  const double samples = static_cast<double>(out.steps * r.cfg.batch_size * r.cfg.grad_accum) * world;
  out.acc = samples > 0 ? v.back() / samples : 0.0;
  w.losses.clear();
  w.correct.clear();
  w.first_step = r.pos.step;
  return out;
}

// One optimizer step of ACCUM micro-batches; returns whether the optimizer ran (fp16 AMP
// skips steps whose gradients overflowed).
bool train_step(Run& r, io::EpochLoader& loader, int64_t s, int64_t epoch, Times& t, Window& w) {
  const Config& cfg = r.cfg;
  const int64_t batch = cfg.batch_size, accum = cfg.grad_accum;
  r.lr = r.schedule.at(r.pos.step);
  set_lr(*r.opt, r.lr);
  r.opt->zero_grad();
  torch::Tensor step_loss, step_correct;
  for (int64_t a = 0; a < accum; ++a) {
    const int64_t micro = s * accum + a;
    const io::Batch* b = loader.next();
    LOCKSTEP_REQUIRE(b != nullptr && b->step == micro, "data loader ended before step " + std::to_string(s));
    const auto tf = Clock::now();
    torch::Tensor x = r.maker->inputs(b->samples.data(), batch);
    if (r.augment.enabled())
      x = augment_images(x, r.augment, io::mix_seed(cfg.seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(micro),
                                                    static_cast<uint64_t>(r.mpi.rank())));
    const torch::Tensor y = r.maker->labels(b->labels.data(), batch);
    torch::Tensor loss, logits;
    {
      AutocastGuard autocast(cfg.amp, r.place.device);
      logits = r.model->forward(x);
      loss = (*r.loss)(logits, y);
    }
    r.reducer->prepare(/*sync=*/a == accum - 1);  // no communication on inner micro-steps
    const auto tb = Clock::now();
    t.forward += std::chrono::duration<double>(tb - tf).count();
    r.scaler.scale(accum > 1 ? loss / static_cast<double>(accum) : loss).backward();
    t.backward += seconds_since(tb);
    const torch::Tensor correct = logits.detach().argmax(1).eq(y).sum();
    step_loss = step_loss.defined() ? step_loss + loss.detach() : loss.detach();
    step_correct = step_correct.defined() ? step_correct + correct : correct;
  }
  r.reducer->finish();
  t.exposed_comm += r.reducer->exposed_seconds();
  const auto to = Clock::now();
  bool stepped = r.scaler.unscale_and_update(r.model->parameters());
  if (stepped) {
    if (cfg.clip_norm > 0) {
      const torch::Tensor over = (clip_grad_norm(r.model->parameters(), cfg.clip_norm) > cfg.clip_norm).to(torch::kLong);
      r.clipped_steps = r.clipped_steps.defined() ? r.clipped_steps + over : over;  // read at log steps only
    }
    r.opt->step();
  }
  t.optimizer += seconds_since(to);
  w.losses.push_back(accum > 1 ? step_loss / static_cast<double>(accum) : step_loss);
  w.correct.push_back(step_correct);
  return stepped;
}

// Everything a run does at a validation point: evaluate, log, metrics row, best.ckpt.
void evaluate_now(Run& r, int64_t epoch, bool detail) {
  const EvalResult ev = validate(r);
  if (ev.count == 0) return;
  report_eval(r, ev, detail);
  if (!detail) write_row(r, "eval", epoch + 1, std::nan(""), -1.0, 0.0, Times{}, &ev);
  update_best(r);
}

}  // namespace

int train_impl(const Config& cfg, const MpiRuntime& mpi) {
  Run r{cfg, mpi, {}};
  build_run(r);
  const int64_t global_batch = cfg.batch_size * mpi.size() * cfg.grad_accum;
  const int64_t last_step = cfg.max_steps > 0 ? std::min(cfg.max_steps, cfg.epochs * r.steps_per_epoch)
                                              : cfg.epochs * r.steps_per_epoch;
  if (r.pos.epoch >= cfg.epochs || (cfg.max_steps > 0 && r.pos.step >= cfg.max_steps)) {
    log::info0("nothing to do: the run is complete at step " + std::to_string(r.pos.step));
    return kExitOk;
  }
  stop_signal::install();
  const auto run_start = Clock::now();
  Times run_times;
  int64_t run_steps = 0;
  bool stop = false;
  ProgressBar bar(r);
  Window window;
  window.first_step = r.pos.step;

  for (; r.pos.epoch < cfg.epochs && !stop;) {
    const int64_t epoch = r.pos.epoch;
    const int64_t first_step = r.pos.samples_done_in_epoch / global_batch;
    // The loader's steps are micro-batches: ACCUM of them make one optimizer step.
    io::EpochLoader loader(*r.train, r.train->order(/*shuffle=*/true, cfg.seed, epoch), cfg.batch_size,
                           r.steps_per_epoch * cfg.grad_accum, first_step * cfg.grad_accum, cfg.prefetch);
    Times epoch_times;
    window.start = Times{};
    double epoch_loss_sum = 0, epoch_acc_sum = 0;
    int64_t epoch_steps = 0;
    r.model->train();
    for (int64_t s = first_step; s < r.steps_per_epoch; ++s) {
      const auto t0 = Clock::now();
      inject_fault(r);
      train_step(r, loader, s, epoch, epoch_times, window);
      epoch_times.seconds += seconds_since(t0);
      if (r.first_step_unix == 0)
        r.first_step_unix =
            std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
      ++r.pos.step;
      ++epoch_steps;
      r.pos.samples_done_in_epoch = (s + 1) * global_batch;
      if (bar.due()) {
        const double loss = torch::stack(window.losses).mean().item<double>();
        const double acc = torch::stack(window.correct).sum().item<double>() /
                           static_cast<double>(window.losses.size() * cfg.batch_size * cfg.grad_accum);
        bar.update(epoch + 1, s + 1, r.steps_per_epoch, loss, acc,
                   epoch_times.samples_per_s(epoch_steps, global_batch), last_step - r.pos.step);
      }
      if (r.pos.step % cfg.log_every == 0) {
        epoch_times.data_wait = loader.wait_seconds();
        const Times wt = epoch_times - window.start;
        window.start = epoch_times;
        const WindowStats ws = close_window(r, window);
        epoch_loss_sum += ws.loss * static_cast<double>(ws.steps);
        epoch_acc_sum += ws.acc * static_cast<double>(ws.steps);
        const double sps = wt.samples_per_s(ws.steps, global_batch);
        log::step0("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(cfg.epochs) + " step " +
                   std::to_string(s + 1) + "/" + std::to_string(r.steps_per_epoch) + " loss " + fmt("%.4f", ws.loss) +
                   " acc " + fmt("%.4f", ws.acc) + " lr " + fmt("%.4g", r.lr) + " " + fmt("%.0f", sps) +
                   " samples/s" + (r.scaler.enabled() ? " loss-scale " + fmt("%g", r.scaler.current_scale()) +
                                                             " skipped " + std::to_string(r.scaler.skipped())
                                                       : std::string()) +
                   "; " + wt.summary(ws.steps));
        write_row(r, "train", epoch + 1, ws.loss, ws.acc, sps, wt, nullptr);
      }
      if (cfg.eval_every > 0 && r.pos.step % cfg.eval_every == 0 && s + 1 < r.steps_per_epoch) {
        evaluate_now(r, epoch, /*detail=*/false);
        r.model->train();
      }
      if (cfg.ckpt_every > 0 && r.pos.step % cfg.ckpt_every == 0) {
        close_window(r, window);  // never checkpoint weights that a NaN step produced
        sync_buffers(r);
        save_checkpoint(r);
      }
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
        close_window(r, window);
        sync_buffers(r);
        save_checkpoint(r);
        finish_checkpoints(r);
        return kExitResumable;
      }
    }
    epoch_times.data_wait = loader.wait_seconds();
    const WindowStats ws = close_window(r, window);
    epoch_loss_sum += ws.loss * static_cast<double>(ws.steps);
    epoch_acc_sum += ws.acc * static_cast<double>(ws.steps);
    run_times += epoch_times;
    run_steps += epoch_steps;
    const double mean_loss = epoch_steps > 0 ? epoch_loss_sum / static_cast<double>(epoch_steps) : 0.0;
    const double mean_acc = epoch_steps > 0 ? epoch_acc_sum / static_cast<double>(epoch_steps) : 0.0;
    const double sps = epoch_times.samples_per_s(epoch_steps, global_batch);
    const EvalResult ev = validate(r);
    report_eval(r, ev, /*detail=*/!stop && (r.pos.epoch + 1 >= cfg.epochs || cfg.epochs <= 5 || (epoch + 1) % 5 == 0));
    report_device_memory(r);
    if (!stop) {
      log::info0("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(cfg.epochs) + " done: loss " +
                 fmt("%.4f", mean_loss) + " acc " + fmt("%.4f", mean_acc) + " val_loss " + fmt("%.4f", ev.loss) +
                 " val_acc " + fmt("%.4f", ev.accuracy) + " val_f1 " + fmt("%.4f", ev.macro_f1) + " " +
                 fmt("%.0f", sps) + " samples/s " + fmt("%.1f", epoch_times.seconds) + " s; " +
                 epoch_times.summary(epoch_steps));
      write_row(r, "epoch", epoch + 1, mean_loss, mean_acc, sps, epoch_times, &ev);
      ++r.pos.epoch;
      r.pos.samples_done_in_epoch = 0;
    }
    update_best(r);
    save_checkpoint(r);
    if (stop || r.pos.epoch >= cfg.epochs) {
      const double total_sps = run_times.samples_per_s(run_steps, global_batch);
      log::info0("finished at step " + std::to_string(r.pos.step) + ": val_acc " + fmt("%.4f", ev.accuracy) +
                 " val_f1 " + fmt("%.4f", ev.macro_f1) + " val_loss " + fmt("%.4f", ev.loss) + ", " +
                 fmt("%.0f", total_sps) + " samples/s, " + fmt("%.1f", seconds_since(run_start)) + " s wall" +
                 (r.scaler.enabled() ? ", " + std::to_string(r.scaler.skipped()) + " step(s) skipped by the fp16 loss scaler"
                                     : std::string()) +
                 "; " + run_times.summary(run_steps));
      Times end_times = run_times;
      end_times.seconds = seconds_since(run_start);  // wall time of the whole run, evaluations included
      write_row(r, "end", epoch + 1, mean_loss, mean_acc, total_sps, end_times, &ev);
    }
  }
  finish_checkpoints(r);
  return kExitOk;
}

int run_training(const Config& cfg, const MpiRuntime& mpi) {
  return with_torch_errors([&] { return train_impl(cfg, mpi); });
}

}  // namespace lockstep
