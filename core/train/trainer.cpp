// trainer: see trainer.hpp.
#include "core/train/trainer.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include "core/eval/eval_report.hpp"
#include "core/train/checkpointer.hpp"
#include "core/train/device_memory.hpp"
#include "core/train/epoch_stats.hpp"
#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/dist/version_info.hpp"
#include "core/train/recorder.hpp"
#include "core/train/session.hpp"
#include "core/train/step_runner.hpp"
#include "core/train/step_timer.hpp"
#include "core/train/stop_protocol.hpp"
#include "core/train/fault_injection.hpp"
#include "core/train/rank_spread.hpp"
#include "core/train/run_rows.hpp"
#include "core/train/run_stream.hpp"
#include "core/train/train_state.hpp"
#include "core/dist/signal_vote.hpp"
#include "core/dist/stop_signal.hpp"
#include "core/model/torch_errors.hpp"
#include "io/loader/epoch_loaders.hpp"
#include "io/loader/sample_order.hpp"

namespace lockstep {
namespace {

using io::MetricsRow;
using io::RowKind;

class Trainer {
 public:
  Trainer(Session& s, Recorder& rec, Checkpointer& ck, TrainState& state)
      : s_(s), cfg_(s.cfg), rec_(rec), ck_(ck), st_(state), timer_(s.place.device),
        window_(s.global_batch, s.mpi.size(), cfg_.amp == Amp::kFp16), ranks_(s.mpi.rank(), s.mpi.size(),
        s.mpi.hosts(), sum(), cfg_.straggler_windows, cfg_.straggler_percent, s.gpu_watch) {
    const TraceRange trace = parse_trace_range(cfg_.trace_steps);
    timer_.set_trace(std::make_unique<StepTrace>(
        trace, s.mpi.rank(), s.mpi.size(), s.mpi.host(), cfg_.run_dir + "/trace", s.mpi.watchdog() ? &s.mpi.watchdog()->flight()
        : nullptr, state.pos().step, cfg_.trace_ops, s.place.device.is_cuda()));
    if (const std::string note = trace_range_note(trace, state.pos().step, s.planned_steps); !note.empty())
      log::warn0(note);
  }

  // What an out-of-memory error in the next step says (device_memory.hpp).
  OomContext oom_context() const {
    return OomContext{st_.pos().step + 1, cfg_.batch_size, cfg_.grad_accum, cfg_.amp != Amp::kNone,
                      cfg_.checkpoint_activations, s_.model->checkpoints_activations()};
  }

  int run() {
    run_start_ = Clock::now();
    // An epoch consumed before its end work does that work first, at --max-steps too (a complete epoch).
    const bool end_work_due = st_.epoch_consumed(s_.steps_per_epoch, s_.global_batch);
    if (st_.stopped() || st_.pos().epoch >= cfg_.epochs || (steps_done() && !end_work_due)) return finish_trained();
    if (const int sig = vote_.now(stop_signal::pending())) return stop_on_signal(sig);
    rec_.record_job(s_.planned_steps);
    window_.restart(st_.pos().step + 1);
    if (!cfg_.init_from.empty() && st_.pos().step == 0) evaluate_now(0, "validation of the initial weights (--init-from)");
    for (bool stop = st_.stopped(); st_.pos().epoch < cfg_.epochs && !stop;) {
      const int64_t epoch = st_.pos().epoch;
      // A checkpoint that had consumed the epoch (stopped at its last step) resumes at its end work.
      const int64_t first = std::min(st_.pos().samples_done_in_epoch / s_.global_batch, s_.steps_per_epoch);
      io::EpochLoader* loader = first < s_.steps_per_epoch ? &loaders_.open(epoch, first * cfg_.grad_accum) : nullptr;
      s_.model->train();
      for (int64_t step = first; step < s_.steps_per_epoch; ++step) {
        const auto t0 = Clock::now();
        const StepOutput out = out_of_memory_named(
            [&] {
              inject_fault(cfg_, s_.mpi.rank(), st_.pos().step);
              st_.set_lr(s_.schedule.at(st_.pos().step));
              return runner_.run(*loader, step, epoch, st_.lr(), st_.pos().step);
            },
            s_.place.device, oom_context());
        window_.add_step(out.loss, out.correct);
        window_.add_times(Times{seconds_since(t0)});
        if (first_step_unix_ == 0) first_step_unix_ = unix_seconds();
        st_.advance_step(step + 1, s_.global_batch);
        draw_progress(epoch, step + 1);
        if (st_.pos().step % cfg_.log_every == 0) log_row(epoch, step + 1);
        const bool mid = step + 1 < s_.steps_per_epoch && !steps_done();  // else end_epoch validates and saves
        if (cfg_.eval_every > 0 && st_.pos().step % cfg_.eval_every == 0 && mid) {
          evaluate_now(epoch, "validation");
          s_.model->train();
          stop = st_.stopped();  // the stop rule
          if (stop) break;
        }
        if (cfg_.ckpt_every > 0 && st_.pos().step % cfg_.ckpt_every == 0 && mid) checkpoint_now();
        if ((stop = steps_done())) break;
        // Every rank learns at the same step whether any rank was signalled (a step later).
        if (const int sig = vote_.at_step(stop_signal::pending())) return stop_on_signal(sig);
      }
      if (!stop && !steps_done() && epoch + 1 < cfg_.epochs) loaders_.start(epoch + 1);  // reads while this epoch ends
      end_epoch(epoch, stop && !st_.epoch_consumed(s_.steps_per_epoch, s_.global_batch));  // cut short?
      stop = stop || st_.stopped() || steps_done();
      if (stop) loaders_.release();
    }
    // A stop during the last validation (or its checkpoint): that checkpoint is the stop's;
    // the final test and the end row run when the job is resumed.
    if (const int sig = vote_.now(stop_signal::pending())) return stop_after_training(sig);
    finish_run(st_.last_eval());
    rec_.wait_checkpoints();
    return kExitOk;
  }

 private:
  AllreduceSum sum() const { return [this](double* v, int n) { s_.mpi.allreduce_sum(v, n); }; }
  bool steps_done() const { return cfg_.max_steps > 0 && st_.pos().step >= cfg_.max_steps; }  // --max-steps

  void draw_progress(int64_t epoch, int64_t step_in_epoch) {
    if (!rec_.progress_due()) return;
    const auto [loss, acc] = window_.local_means(cfg_.batch_size * cfg_.grad_accum);
    // epoch, epochs, step, steps, loss, accuracy
    Progress pr{epoch + 1, cfg_.epochs, step_in_epoch, s_.steps_per_epoch, loss, acc};
    const double secs = st_.epoch_stats().times.seconds;
    pr.samples_per_s = secs > 0 ? st_.epoch_stats().samples / secs : 0.0;
    pr.eta_s = pr.samples_per_s > 0
                   ? static_cast<double>((s_.planned_steps - st_.pos().step) * s_.global_batch) / pr.samples_per_s
                   : -1.0;
    rec_.progress(pr);
  }

  // Collective: closes the log window into the epoch's and the run's statistics.
  WindowStats close_window() {
    Times phases;
    timer_.collect(&phases);
    window_.add_times(phases);
    const WindowStats w = window_.close(sum(), st_.lr(), st_.pos().step + 1);
    s_.scaler.check_progress(st_.pos().step);  // fp16 skipping every step: an error, as a NaN loss is
    settle_clipped();
    st_.add_window(w);
    run_ += w;
    return w;
  }

  MetricsRow base_row(RowKind kind, int64_t epoch) const { return row_at(kind, epoch, st_.pos().step); }

  void add_run_state(MetricsRow& row) {
    row.lr = st_.lr();
    if (s_.scaler.enabled()) {
      row.loss_scale = s_.scaler.current_scale();
      row.skipped_steps = s_.scaler.skipped();
    }
    if (cfg_.clip_norm > 0) row.clipped_steps = st_.clipped_steps();
  }

  // The run's clipped steps (a device read) into the state: at windows, validations, checkpoints.
  void settle_clipped() {
    if (cfg_.clip_norm > 0) st_.set_clipped_steps(clipped_before_ + runner_.clipped_steps());
  }

  void log_row(int64_t epoch, int64_t step_in_epoch) {
    const WindowStats w = close_window();
    MetricsRow row = base_row(RowKind::kTrain, epoch);
    row.unix_time = unix_seconds();  // after the window's device work is done (close_window waits for it)
    const std::string spread = ranks_.observe(w.times, w.steps, &row);  // collective
    add_training(&row, w, w.samples_per_s(), sequence_);
    add_run_state(row);
    log::step0(train_line(row, cfg_.epochs, step_in_epoch, s_.steps_per_epoch, w.steps) +
               (timer_.on_device() ? " (device time)" : "") + spread);
    rec_.row(row);
  }

  // Collective. Validation on the val split (nothing when there is none); the stop rule
  // sees every result (identical on every rank).
  EvalResult validate() {
    if (!s_.val) return EvalResult{};
    if (last_eval_step_ == st_.pos().step) return st_.last_eval();  // this step's weights were just validated
    const EvalResult ev = evaluate_val();
    last_eval_step_ = st_.pos().step;
    if (st_.observe_eval(ev, seconds_since(run_start_)))
      log::info0(fmt::format("stopping at step {}: {}", st_.pos().step, st_.stopped_early()));
    return ev;
  }

  // Collective: the current weights on the val split (which must exist), every rank with
  // rank 0's BatchNorm statistics first.
  EvalResult evaluate_val() {
    sync_buffers(*s_.model, *s_.place.comm, cfg_.sync_buffers);
    return evaluate(*s_.model, *s_.val, *s_.maker, cfg_.batch_size, cfg_.prefetch, s_.classes, s_.mpi, cfg_.eval_hflip);
  }

  void report_eval(const char* what, const std::string& split, const EvalResult& ev, bool detail,
                   const std::string& note = "") const {
    log_eval(what, st_.pos().step, split, ev, s_.classes, s_.manifest.spec.class_names, detail, note);
  }

  // --train.eval-every: an evaluation, its row and best.ckpt, mid-epoch.
  void evaluate_now(int64_t epoch, const char* what) {
    const EvalResult ev = validate();
    if (ev.count == 0) return;
    report_eval(what, cfg_.val_split, ev, /*detail=*/false);
    settle_clipped();
    MetricsRow row = base_row(RowKind::kEval, epoch);
    add_scores(&row, ScoreSet::kVal, ev);
    add_run_state(row);
    rec_.row(row);
    ck_.update_best(st_);
  }

  // Collective. A mid-epoch checkpoint: the open window is checked (no weights a NaN
  // step made are saved) and counted in the stored epoch statistics, but stays open.
  void checkpoint_now() {
    const auto t0 = Clock::now();
    settle_clipped();
    const TrainState at = st_.with_open_window(window_.peek(sum(), st_.lr()));
    s_.scaler.check_progress(st_.pos().step);
    sync_buffers(*s_.model, *s_.place.comm, cfg_.sync_buffers);
    ck_.save(at);
    timer_.trace_span("checkpoint", t0);
  }

  // Training is complete at this step (a resume of a finished run). The run is complete
  // only once its end row is written: a job stopped or killed during its final evaluation
  // does that evaluation now.
  int finish_trained() {
    double ended = rec_.ended() ? 1.0 : 0.0;  // rank 0 knows; every rank must agree
    s_.mpi.allreduce_max(&ended, 1);
    if (ended > 0) {
      log::info0(st_.stopped()
                     ? fmt::format("nothing to do: the run stopped at step {}: {}", st_.pos().step, st_.stopped_early())
                     : "nothing to do: the run is complete at step " + std::to_string(st_.pos().step));
      rec_.note_options_unused();
      return kExitOk;
    }
    rec_.record_job(s_.planned_steps);
    log::info0(final_evaluation_line(st_.pos(), cfg_.epochs, cfg_.max_steps));
    last_epoch_ = std::min<int64_t>(st_.pos().epoch, cfg_.epochs - 1);
    if (const int sig = vote_.now(stop_signal::pending())) return stop_after_training(sig);
    // The final weights' validation again (its scores in the checkpoint have no loss), not
    // shown to the stop rule: the run is over.
    finish_run(s_.val ? evaluate_val() : EvalResult{});
    rec_.wait_checkpoints();
    return kExitOk;
  }

  // Collective: a stop after the last step. Its checkpoint exists (end_epoch saved it, or
  // the resumed run loaded it): made durable and marked resumable; exit 3.
  int stop_after_training(int sig) {
    log::info0(fmt::format("signal {} received after the last step ({}): its checkpoint is kept and the final "
                           "evaluation runs when the job resumes (--resume auto); exiting with code {}",
                           sig, st_.pos().step, static_cast<int>(kExitResumable)));
    return exit_resumable(s_.mpi, rec_, st_.pos().step);
  }

  // Collective: checkpoint, make it durable, let every rank know, exit 3.
  int stop_on_signal(int sig) {
    log::info0(fmt::format("signal {} received: checkpointing at step {} and exiting with code {} (resumable: "
                           "--resume auto continues here)",
                           sig, st_.pos().step, static_cast<int>(kExitResumable)));
    close_window();
    sync_buffers(*s_.model, *s_.place.comm, cfg_.sync_buffers);
    ck_.save(st_);
    return exit_resumable(s_.mpi, rec_, st_.pos().step);
  }

  void end_epoch(int64_t epoch, bool stopped) {
    close_window();
    const WindowStats e = st_.epoch_stats();
    if (sequence_) runner_.check_alignments(epoch, e.samples);
    const EvalResult ev = validate();
    const bool last = stopped || epoch + 1 >= cfg_.epochs;
    report_eval("validation", cfg_.val_split, ev, /*detail=*/!stopped && (last || cfg_.epochs <= 5 || (epoch + 1) % 5 == 0));
    report_device_memory(s_.mpi, s_.place.device);
    end_epoch_stats_ = e;
    if (!stopped) {
      MetricsRow row = base_row(RowKind::kEpoch, epoch);
      add_training(&row, e, e.samples_per_s(), sequence_);
      add_scores(&row, ScoreSet::kVal, ev);
      add_run_state(row);
      log::info0(epoch_line(row, cfg_.epochs, e.steps));
      rec_.row(row);
      st_.end_epoch();
    }
    ck_.update_best(st_);
    ck_.save(st_);
    last_epoch_ = epoch;
  }

  // The test split, once, with the weights validation chose; then the end row.
  // VAL: the final weights' validation (count 0 when there is none).
  void finish_run(const EvalResult& val) {
    EvalResult test;
    std::string chosen;
    int64_t weights_step = st_.pos().step;
    if (s_.test) {
      const int64_t best = ck_.restore_best();
      if (best >= 0) weights_step = best;
      chosen = best >= 0 ? fmt::format("the best {} checkpoint, step {}", to_string(cfg_.best_metric), best)
                         : std::string("the last weights, step ") + std::to_string(st_.pos().step) +
                               (s_.val ? "" : "; no validation split to choose others");
      test = evaluate(*s_.model, *s_.test, *s_.maker, cfg_.batch_size, cfg_.prefetch, s_.classes, s_.mpi, cfg_.eval_hflip);
      report_eval("test", cfg_.test_split, test, /*detail=*/true, ", " + chosen);
      MetricsRow row = base_row(RowKind::kTest, last_epoch_);
      row.split = cfg_.test_split;
      row.weights_step = weights_step;
      row.selected_by = ck_.best_step() >= 0 ? to_string(cfg_.best_metric) : "last";
      row.eval_hflip = cfg_.eval_hflip;
      add_scores(&row, ScoreSet::kTest, test);
      rec_.row(row);
    }
    const double total_sps = run_.samples_per_s();
    const std::string tested =
        test.count == 0 ? ""
        : test.sequence ? fmt::format(", test_cer {:.4f} test_wer {:.4f} ({})", test.cer, test.wer, chosen)
                        : fmt::format(", test_acc {:.4f} test_f1 {:.4f} ({})", test.accuracy, test.macro_f1, chosen);
    const std::string skipped =
        s_.scaler.enabled() ? fmt::format(", {} step(s) skipped by the fp16 loss scaler", s_.scaler.skipped()) : "";
    if (const auto none = nothing_trained_note(s_.scaler.skipped() - skipped_before_, run_.steps); !none.empty())
      log::warn0(none);
    MetricsRow row = base_row(RowKind::kEnd, last_epoch_);
    add_training(&row, end_epoch_stats_, total_sps, sequence_);
    add_scores(&row, ScoreSet::kVal, val);
    add_scores(&row, ScoreSet::kTest, test);
    Times wall = run_.times;
    wall.seconds = seconds_since(run_start_);  // the whole run, evaluations included
    row.set_times(wall);
    add_run_state(row);
    log::info0(fmt::format("finished at step {}:{}{}, {}, {:.1f} s wall{}{}", st_.pos().step,
                           row.val_loss ? val_text(row) : " no validation split", tested,
                           run_.steps > 0 ? fmt::format("{:.0f} samples/s", total_sps) : "no step trained by this job",
                           wall.seconds, skipped, run_.steps > 0 ? "; " + run_.times.summary(run_.steps) : ""));
    row.stopped_early = st_.stopped_early();
    row.world_size = s_.mpi.size();
    row.global_batch = s_.global_batch;
    row.params = s_.model->parameter_count();
    row.grad_wire_bytes = static_cast<int64_t>(s_.reducer->wire_bytes_per_step());  // per rank and step
    row.grad_buckets = static_cast<int64_t>(s_.reducer->buckets().size());
    if (first_step_unix_ > 0) row.first_step_unix_ms = static_cast<int64_t>(first_step_unix_ * 1000);
    rec_.row(row);
  }

  Session& s_;
  const Config& cfg_;
  Recorder& rec_;
  Checkpointer& ck_;
  TrainState& st_;
  const int64_t clipped_before_ = st_.clipped_steps();  // a resumed run's, from its checkpoint
  StepTimer timer_;
  StepRunner runner_{s_, timer_};  // the device step
  io::EpochLoaders loaders_{*s_.train, static_cast<uint64_t>(cfg_.seed), cfg_.batch_size, s_.steps_per_epoch * cfg_.grad_accum,
                            cfg_.prefetch, runner_.batch_memory()};  // a GPU: the feed copies out of them
  const bool sequence_ = runner_.sequence();  // CTC on sequence targets
  LogWindow window_;
  RankMonitor ranks_;  // every rank's breakdown at log rows, stragglers
  SignalVote vote_{s_.mpi};  // the stop-signal agreement, posted at one step, read at the next
  WindowStats run_;               // this process's steps, for the end row's throughput
  const int64_t skipped_before_ = s_.scaler.enabled() ? s_.scaler.skipped() : 0;  // fp16: at the run's start
  WindowStats end_epoch_stats_;   // the last epoch's (or partial epoch's) statistics
  int64_t last_epoch_ = 0;
  int64_t last_eval_step_ = -1;
  double first_step_unix_ = 0;    // wall clock when this process finished its first step
  Clock::time_point run_start_;
};

int train_impl(const Config& cfg, const MpiRuntime& mpi) {
  Session session(cfg, mpi);
  const RunStream run_stream(session.place.device);  // every step, evaluation and copy of the run
  std::unique_ptr<Recorder> recorder = open_recorder(cfg, mpi);
  Checkpointer checkpointer(cfg, session.manifest,
                            CheckpointParts{*session.model, *session.opt, *session.step_counter, session.scaler, mpi,
                                            session.place.device, session.reader_key()},
                            *recorder);
  TrainState state(cfg);
  const std::string resume = checkpointer.agree_resume_path();
  // Dropout differs per rank: seeded from (seed, rank, step); a same-world resume restores its states.
  torch::manual_seed(io::mix_seed(cfg.seed, static_cast<uint64_t>(mpi.rank()) + 1, 0));
  if (!resume.empty()) checkpointer.resume(resume, &state, session.global_batch, session.steps_per_epoch);
  if (!resume.empty() && !cfg.init_from.empty())  // its table said "weights only ... start afresh"
    log::info0("--model.init-from " + cfg.init_from + " is not used: the run resumes from " + resume +
               ", whose weights and optimizer state replace the file's");
  session.plan_from(state.pos(), !resume.empty() && state.lr() > 0 ? state.lr() : -1.0);
  recorder->start(state.pos().step, resume.empty() ? 0 : state.pos().epoch + 1);  // 1-based, as rows count
  log::info0_lines(session.describe());
  log::info0("versions: " + version_line());
  // Gone before the communicator: ncclCommDestroy waits for every CUDA graph holding its work.
  auto trainer = std::make_unique<Trainer>(session, *recorder, checkpointer, state);
  const int code = trainer->run();
  trainer.reset();
  session.close();
  return code;
}

}  // namespace

int run_training(const Config& cfg, const MpiRuntime& mpi) {
  return with_torch_errors([&] { return train_impl(cfg, mpi); });
}

}  // namespace lockstep
