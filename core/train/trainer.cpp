// trainer: see trainer.hpp.
#include "core/train/trainer.hpp"

#include <fmt/format.h>

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <thread>

#include "core/train/checkpointer.hpp"
#include "core/train/device_memory.hpp"
#include "core/train/epoch_stats.hpp"
#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/dist/version_info.hpp"
#include "core/optim/optimizer.hpp"
#include "core/train/objective.hpp"
#include "core/train/recorder.hpp"
#include "core/train/session.hpp"
#include "core/train/step_timer.hpp"
#include "core/train/fault_injection.hpp"
#include "core/train/rank_spread.hpp"
#include "core/train/stop_rule.hpp"
#include "core/dist/stop_signal.hpp"
#include "core/model/torch_errors.hpp"
#include "io/loader/epoch_loader.hpp"
#include "io/loader/sample_order.hpp"

namespace lockstep {
namespace {

using Row = io::Json;

void add_times(Row& row, const Times& t) {
  row["seconds"] = t.seconds;
  row["data_wait_s"] = t.data_wait;
  row["forward_s"] = t.forward;
  row["backward_s"] = t.backward;
  row["exposed_comm_s"] = t.exposed_comm;
  row["optimizer_s"] = t.optimizer;
}

// A number for a row: JSON has no NaN (null says "not measured").
io::Json number(double v) { return std::isfinite(v) ? io::Json(v) : io::Json(nullptr); }

class Trainer {
 public:
  Trainer(Session& s, Recorder& rec, Checkpointer& ck, RunProgress& p)
      : s_(s), cfg_(s.cfg), rec_(rec), ck_(ck), p_(p), timer_(s.place.device),
        window_(s.global_batch, s.mpi.size(), cfg_.amp == Amp::kFp16),
        ranks_(s.mpi.rank(), s.mpi.size(), s.mpi.hosts(), sum(), cfg_.straggler_windows, cfg_.straggler_percent) {
    timer_.set_trace(std::make_unique<StepTrace>(parse_trace_range(cfg_.trace_steps), s.mpi.rank(), s.mpi.host(),
                                                 cfg_.run_dir + "/trace",
                                                 s.mpi.watchdog() ? &s.mpi.watchdog()->flight() : nullptr, p.pos.step));
  }

  int run() {
    if (!p_.stopped_early.empty()) {
      log::info0(fmt::format("nothing to do: the run stopped at step {}: {}", p_.pos.step, p_.stopped_early));
      return kExitOk;
    }
    if (p_.pos.epoch >= cfg_.epochs || (cfg_.max_steps > 0 && p_.pos.step >= cfg_.max_steps)) {
      log::info0("nothing to do: the run is complete at step " + std::to_string(p_.pos.step));
      return kExitOk;
    }
    stop_signal::install();
    run_start_ = Clock::now();
    window_.restart(p_.pos.step + 1);
    rule_.load_state_json(p_.stop_rule, cfg_.run_dir);
    if (!cfg_.init_from.empty() && p_.pos.step == 0) evaluate_now(0, "validation of the initial weights (--init-from)");
    bool stop = !p_.stopped_early.empty();
    while (p_.pos.epoch < cfg_.epochs && !stop) {
      const int64_t epoch = p_.pos.epoch;
      const int64_t first = p_.pos.samples_done_in_epoch / s_.global_batch;
      // The loader's steps are micro-batches: ACCUM of them make one optimizer step.
      io::EpochLoader loader(*s_.train, s_.train->order(/*shuffle=*/true, cfg_.seed, epoch, cfg_.batch_size), cfg_.batch_size,
                             s_.steps_per_epoch * cfg_.grad_accum, first * cfg_.grad_accum, cfg_.prefetch);
      s_.model->train();
      for (int64_t step = first; step < s_.steps_per_epoch; ++step) {
        const auto t0 = Clock::now();
        inject_fault(cfg_, s_.mpi.rank(), p_.pos.step);
        train_step(loader, step, epoch);
        window_.add_times(Times{seconds_since(t0)});
        if (first_step_unix_ == 0) first_step_unix_ = unix_seconds();
        ++p_.pos.step;
        p_.pos.samples_done_in_epoch = (step + 1) * s_.global_batch;
        draw_progress(epoch, step + 1);
        if (p_.pos.step % cfg_.log_every == 0) log_row(epoch, step + 1);
        if (cfg_.eval_every > 0 && p_.pos.step % cfg_.eval_every == 0 && step + 1 < s_.steps_per_epoch) {
          evaluate_now(epoch, "validation");
          s_.model->train();
          if (!p_.stopped_early.empty()) {
            stop = true;
            break;
          }
        }
        if (cfg_.ckpt_every > 0 && p_.pos.step % cfg_.ckpt_every == 0) checkpoint_now();
        if (cfg_.max_steps > 0 && p_.pos.step >= cfg_.max_steps) {
          stop = true;
          break;
        }
        // Every rank learns at the same step boundary whether any rank was signalled.
        double signalled = stop_signal::pending();
        s_.mpi.allreduce_max(&signalled, 1);
        if (signalled > 0) return stop_on_signal(static_cast<int>(signalled));
      }
      end_epoch(epoch, stop);
      stop = stop || !p_.stopped_early.empty();
    }
    finish_run();
    rec_.wait_checkpoints();
    return kExitOk;
  }

 private:
  AllreduceSum sum() const {
    return [this](double* v, int n) { s_.mpi.allreduce_sum(v, n); };
  }

  // One optimizer step of ACCUM micro-batches.
  void train_step(io::EpochLoader& loader, int64_t step, int64_t epoch) {
    const int64_t batch = cfg_.batch_size, accum = cfg_.grad_accum;
    p_.lr = s_.schedule.at(p_.pos.step);
    set_lr(*s_.opt, p_.lr);
    s_.opt->zero_grad();
    timer_.begin_step();
    torch::Tensor step_loss, step_correct;
    for (int64_t a = 0; a < accum; ++a) {
      const int64_t micro = step * accum + a;
      const io::Batch* b = loader.next();
      LOCKSTEP_REQUIRE(b != nullptr && b->step == micro, "data loader ended before step " + std::to_string(step));
      const int64_t* records = b->labels.data();
      torch::Tensor x = s_.maker->inputs(b->samples.data(), batch, records);
      if (s_.augment.enabled())
        x = augment_batch(x, s_.augment, io::mix_seed(cfg_.seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(micro),
                                                      static_cast<uint64_t>(s_.mpi.rank())));
      timer_.mark(Phase::kData);
      Scored scored;
      {
        AutocastGuard autocast(cfg_.amp, s_.place.device);
        scored = objective_(*s_.model, *s_.maker, x, records, batch);
      }
      timer_.mark(Phase::kForward);
      s_.reducer->prepare(/*sync=*/a == accum - 1);  // no communication on inner micro-steps
      s_.scaler.scale(accum > 1 ? scored.loss / static_cast<double>(accum) : scored.loss).backward();
      timer_.mark(Phase::kBackward);
      const torch::Tensor loss = scored.loss, correct = scored.correct;
      step_loss = step_loss.defined() ? step_loss + loss.detach() : loss.detach();
      step_correct = step_correct.defined() ? step_correct + correct : correct;
    }
    s_.reducer->finish([this] { timer_.mark(Phase::kComm); });
    if (s_.scaler.unscale_and_update(s_.trainable)) {
      if (cfg_.clip_norm > 0) {
        const torch::Tensor over =
            (clip_grad_norm(s_.trainable, cfg_.clip_norm) > cfg_.clip_norm).to(torch::kLong);
        clipped_ = clipped_.defined() ? clipped_ + over : over;  // read at log steps only
      }
      s_.opt->step();
    }
    timer_.mark(Phase::kOptimizer);
    window_.add_step(accum > 1 ? step_loss / static_cast<double>(accum) : step_loss, step_correct);
  }

  void draw_progress(int64_t epoch, int64_t step_in_epoch) {
    if (!rec_.progress_due()) return;
    const auto [loss, acc] = window_.local_means(cfg_.batch_size * cfg_.grad_accum);
    Progress pr;
    pr.epoch = epoch + 1;
    pr.epochs = cfg_.epochs;
    pr.step = step_in_epoch;
    pr.steps = s_.steps_per_epoch;
    pr.loss = loss;
    pr.accuracy = acc;
    const double secs = p_.epoch.times.seconds;
    pr.samples_per_s = secs > 0 ? p_.epoch.samples / secs : 0.0;
    pr.eta_s = pr.samples_per_s > 0
                   ? static_cast<double>((s_.planned_steps - p_.pos.step) * s_.global_batch) / pr.samples_per_s
                   : -1.0;
    rec_.progress(pr);
  }

  // Collective: closes the log window into the epoch's and the run's statistics.
  WindowStats close_window() {
    Times phases;
    timer_.collect(&phases);
    window_.add_times(phases);
    const WindowStats w = window_.close(sum(), p_.lr, p_.pos.step + 1);
    p_.epoch += w;
    run_ += w;
    return w;
  }

  Row base_row(const char* kind, int64_t epoch) const {
    Row row;
    row["kind"] = kind;
    row["epoch"] = epoch + 1;
    row["step"] = p_.pos.step;
    return row;
  }

  void add_run_state(Row& row) {
    row["lr"] = p_.lr;
    if (s_.scaler.enabled()) {
      row["loss_scale"] = s_.scaler.current_scale();
      row["skipped_steps"] = s_.scaler.skipped();
    }
    if (cfg_.clip_norm > 0) row["clipped_steps"] = clipped_.defined() ? clipped_.item<int64_t>() : int64_t{0};
  }

  void log_row(int64_t epoch, int64_t step_in_epoch) {
    const WindowStats w = close_window();
    const double sps = w.times.samples_per_s(w.steps, s_.global_batch);
    const std::string scale = s_.scaler.enabled() ? fmt::format(" loss-scale {:g} skipped {}", s_.scaler.current_scale(),
                                                                s_.scaler.skipped())
                                                  : "";
    Row row = base_row("train", epoch);
    const std::string spread = ranks_.observe(w.times, w.steps, &row);  // collective
    log::step0(fmt::format("epoch {}/{} step {}/{} loss {:.4f}{} lr {:.4g} {:.0f} samples/s{}; {}{}{}", epoch + 1,
                           cfg_.epochs, step_in_epoch, s_.steps_per_epoch, w.loss(), acc_text(w.acc()), p_.lr, sps, scale,
                           w.times.summary(w.steps), timer_.on_device() ? " (device time)" : "", spread));
    row["train_loss"] = number(w.loss());
    if (!sequence_) row["train_acc"] = number(w.acc());
    row["samples_per_s"] = sps;
    add_times(row, w.times);
    add_run_state(row);
    rec_.row(row);
  }

  // Collective. Validation on the val split (nothing when there is none); the stop rule
  // sees every result (identical on every rank).
  EvalResult validate() {
    if (!s_.val) return EvalResult{};
    if (last_eval_step_ == p_.pos.step) return p_.last_eval;  // this step's weights were just validated
    sync_buffers(s_);
    p_.last_eval = evaluate(*s_.model, *s_.val, *s_.maker, cfg_.batch_size, cfg_.prefetch, s_.classes, s_.mpi, cfg_.eval_hflip);
    last_eval_step_ = p_.pos.step;
    if (rule_.active() && p_.stopped_early.empty()) {
      p_.stopped_early = rule_.observe(p_.last_eval, p_.pos.step, seconds_since(run_start_));
      p_.stop_rule = rule_.state_json();
      if (!p_.stopped_early.empty()) log::info0(fmt::format("stopping at step {}: {}", p_.pos.step, p_.stopped_early));
    }
    return p_.last_eval;
  }

  void report_eval(const char* what, const std::string& split, const EvalResult& ev, bool detail,
                   const std::string& note = "") {
    if (ev.count == 0) return;
    if (ev.sequence) {
      log::info0(fmt::format("{} at step {} on '{}' ({} samples{}): loss {:.4f} CER {:.4f} WER {:.4f}", what, p_.pos.step,
                             split, ev.count, note, ev.loss, ev.cer, ev.wer));
      return;
    }
    log::info0(fmt::format("{} at step {} on '{}' ({} samples{}): loss {:.4f} accuracy {:.4f} macro-F1 {:.4f}", what,
                           p_.pos.step, split, ev.count, note, ev.loss, ev.accuracy, ev.macro_f1));
    if (!detail) return;
    log::info0("per-class metrics:\n" + per_class_table(ev.metrics, ev.confusion, s_.manifest.spec.class_names));
    log::info0("confusion matrix (rows: true class, columns: predicted):\n" + confusion_table(ev.confusion, s_.classes));
  }

  // --train.eval-every: an evaluation, its row and best.ckpt, mid-epoch.
  void evaluate_now(int64_t epoch, const char* what) {
    const EvalResult ev = validate();
    if (ev.count == 0) return;
    report_eval(what, cfg_.val_split, ev, /*detail=*/false);
    Row row = base_row("eval", epoch);
    add_eval(row, "val", ev);
    add_run_state(row);
    rec_.row(row);
    ck_.update_best(p_);
  }

  // Collective. A mid-epoch checkpoint: the open window is checked (no weights a NaN
  // step made are saved) and counted in the stored epoch statistics, but stays open.
  void checkpoint_now() {
    const auto t0 = Clock::now();
    RunProgress at = p_;
    at.epoch += window_.peek(sum(), p_.lr);
    sync_buffers(s_);
    ck_.save(at);
    timer_.trace_span("checkpoint", t0);
  }

  // Collective: checkpoint, make it durable, let every rank know, exit 3.
  int stop_on_signal(int sig) {
    log::info0(fmt::format("signal {} received: checkpointing at step {} and exiting with code {} (resumable: "
                           "--resume auto continues here)",
                           sig, p_.pos.step, static_cast<int>(kExitResumable)));
    close_window();
    sync_buffers(s_);
    ck_.save(p_);
    rec_.wait_checkpoints();  // rank 0: the checkpoint is on disk (or this throws)
    rec_.mark_resumable(p_.pos.step);
    s_.mpi.barrier();  // no rank exits before rank 0's checkpoint is durable
    stop_signal::mark_durable();
    return kExitResumable;
  }

  void end_epoch(int64_t epoch, bool stopped) {
    close_window();
    const WindowStats e = p_.epoch;
    const double sps = e.times.samples_per_s(e.steps, s_.global_batch);
    const EvalResult ev = validate();
    const bool last = stopped || epoch + 1 >= cfg_.epochs;
    report_eval("validation", cfg_.val_split, ev, /*detail=*/!stopped && (last || cfg_.epochs <= 5 || (epoch + 1) % 5 == 0));
    report_device_memory(s_.mpi, s_.place.device);
    end_epoch_stats_ = e;
    if (!stopped) {
      log::info0(fmt::format("epoch {}/{} done: loss {:.4f}{}{} {:.0f} samples/s {:.1f} s; {}", epoch + 1, cfg_.epochs,
                             e.loss(), acc_text(e.acc()), val_text(ev), sps, e.times.seconds, e.times.summary(e.steps)));
      Row row = base_row("epoch", epoch);
      row["train_loss"] = number(e.loss());
      if (!sequence_) row["train_acc"] = number(e.acc());
      add_eval(row, "val", ev);
      row["samples_per_s"] = sps;
      add_times(row, e.times);
      add_run_state(row);
      rec_.row(row);
      ++p_.pos.epoch;
      p_.pos.samples_done_in_epoch = 0;
      p_.epoch = WindowStats{};
    }
    ck_.update_best(p_);
    ck_.save(p_);
    last_epoch_ = epoch;
  }

  static std::string val_text(const EvalResult& ev) { return eval_text("val", ev); }
  // Training accuracy means nothing for CTC: not shown.
  std::string acc_text(double acc) const { return sequence_ ? "" : fmt::format(" acc {:.4f}", acc); }

  // The test split, once, with the weights validation chose; then the end row.
  void finish_run() {
    const EvalResult val = p_.last_eval;
    EvalResult test;
    std::string chosen;
    int64_t weights_step = p_.pos.step;
    if (s_.test) {
      const int64_t best = ck_.restore_best();
      if (best >= 0) {
        weights_step = best;
        chosen = fmt::format("the best {} checkpoint, step {}", to_string(cfg_.best_metric), best);
      } else {
        chosen = std::string("the last weights, step ") + std::to_string(p_.pos.step) +
                 (s_.val ? "" : "; no validation split to choose others");
      }
      test = evaluate(*s_.model, *s_.test, *s_.maker, cfg_.batch_size, cfg_.prefetch, s_.classes, s_.mpi, cfg_.eval_hflip);
      report_eval("test", cfg_.test_split, test, /*detail=*/true, ", " + chosen);
      Row row = base_row("test", last_epoch_);
      row["split"] = cfg_.test_split;
      row["weights_step"] = weights_step;
      row["selected_by"] = best_selected() ? to_string(cfg_.best_metric) : "last";
      row["eval_hflip"] = cfg_.eval_hflip;
      add_eval(row, "test", test);
      rec_.row(row);
    }
    const double total_sps = run_.times.samples_per_s(run_.steps, s_.global_batch);
    const std::string tested =
        test.count == 0 ? ""
        : test.sequence ? fmt::format(", test_cer {:.4f} test_wer {:.4f} ({})", test.cer, test.wer, chosen)
                        : fmt::format(", test_acc {:.4f} test_f1 {:.4f} ({})", test.accuracy, test.macro_f1, chosen);
    const std::string skipped =
        s_.scaler.enabled() ? fmt::format(", {} step(s) skipped by the fp16 loss scaler", s_.scaler.skipped()) : "";
    log::info0(fmt::format("finished at step {}:{}{}, {:.0f} samples/s, {:.1f} s wall{}; {}", p_.pos.step,
                           val.count > 0 ? val_text(val) : " no validation split", tested, total_sps,
                           seconds_since(run_start_), skipped, run_.times.summary(run_.steps)));
    Row row = base_row("end", last_epoch_);
    row["train_loss"] = number(end_epoch_stats_.loss());
    if (!sequence_) row["train_acc"] = number(end_epoch_stats_.acc());
    add_eval(row, "val", val);
    add_eval(row, "test", test);
    row["samples_per_s"] = total_sps;
    Times wall = run_.times;
    wall.seconds = seconds_since(run_start_);  // the whole run, evaluations included
    add_times(row, wall);
    add_run_state(row);
    if (!p_.stopped_early.empty()) row["stopped_early"] = p_.stopped_early;
    row["world_size"] = s_.mpi.size();
    row["global_batch"] = s_.global_batch;
    row["params"] = s_.parameter_count();
    row["grad_wire_bytes"] = static_cast<int64_t>(s_.reducer->wire_bytes_per_step());  // per rank and step
    row["grad_buckets"] = static_cast<int64_t>(s_.reducer->buckets().size());
    row["first_step_unix_ms"] = static_cast<int64_t>(first_step_unix_ * 1000);
    rec_.row(row);
  }

  bool best_selected() const { return ck_.best_step() >= 0; }

  Session& s_;
  const Config& cfg_;
  Recorder& rec_;
  Checkpointer& ck_;
  RunProgress& p_;
  StepTimer timer_;
  const Objective objective_{s_.manifest.spec, *s_.loss};
  const bool sequence_ = objective_.sequence();  // CTC on sequence targets
  LogWindow window_;
  RankMonitor ranks_;  // every rank's breakdown at log rows, stragglers
  WindowStats run_;               // this process's steps, for the end row's throughput
  WindowStats end_epoch_stats_;   // the last epoch's (or partial epoch's) statistics
  int64_t last_epoch_ = 0;
  int64_t last_eval_step_ = -1;
  StopRule rule_{cfg_};
  torch::Tensor clipped_;         // device counter of steps whose norm was clipped
  double first_step_unix_ = 0;    // wall clock when this process finished its first step
  Clock::time_point run_start_;
};

int train_impl(const Config& cfg, const MpiRuntime& mpi) {
  Session session(cfg, mpi);
  std::unique_ptr<Recorder> recorder = open_recorder(cfg, mpi);
  Checkpointer checkpointer(session, *recorder);
  RunProgress progress;
  const std::string resume = checkpointer.agree_resume_path();
  // Dropout differs per rank; a fresh start (or a resume on another world size) seeds it
  // from (seed, rank, step). A resume on the same world size restores the saved states.
  torch::manual_seed(io::mix_seed(cfg.seed, static_cast<uint64_t>(mpi.rank()) + 1, 0));
  if (!resume.empty()) checkpointer.resume(resume, &progress);
  recorder->start(progress.pos.step);
  // A "start" row per invocation: what ran, on how many ranks, from which step.
  Row start_row{{"kind", "start"}, {"step", progress.pos.step}, {"epoch", progress.pos.epoch + 1},
                {"world_size", mpi.size()}, {"unix_time", unix_seconds()}, {"versions", io::Json::object()}};
  for (const auto& [name, version] : version_items()) start_row["versions"][name] = version;
  recorder->row(start_row);
  const std::string start = session.describe();
  for (size_t at = 0; at < start.size();) {  // one timestamped line each
    const size_t nl = std::min(start.find('\n', at), start.size());
    log::info0(start.substr(at, nl - at));
    at = nl + 1;
  }
  log::info0("versions: " + version_line());
  Trainer trainer(session, *recorder, checkpointer, progress);
  const int code = trainer.run();
  session.close();
  return code;
}

}  // namespace

int run_training(const Config& cfg, const MpiRuntime& mpi) {
  return with_torch_errors([&] { return train_impl(cfg, mpi); });
}

}  // namespace lockstep
