// run_rows: see run_rows.hpp.
#include "core/train/run_rows.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/config/ini_text.hpp"

namespace lockstep {
namespace {

Times times_of(const io::MetricsRow& r) {
  Times t;
  t.seconds = r.seconds.value_or(0);
  t.data_wait = r.data_wait_s.value_or(0);
  t.forward = r.forward_s.value_or(0);
  t.backward = r.backward_s.value_or(0);
  t.exposed_comm = r.exposed_comm_s.value_or(0);
  t.optimizer = r.optimizer_s.value_or(0);
  return t;
}

// A CTC model's rows carry no training accuracy: nothing is shown.
std::string acc_text(const io::MetricsRow& r) { return r.train_acc ? fmt::format(" acc {:.4f}", *r.train_acc) : ""; }

}  // namespace

io::MetricsRow row_at(io::RowKind kind, int64_t epoch, int64_t step) {
  io::MetricsRow row;
  row.kind = kind;
  row.epoch = epoch + 1;
  row.step = step;
  row.unix_time = unix_seconds();  // when the row was made: time-to-best in `lockstep report`
  return row;
}

void add_training(io::MetricsRow* row, const WindowStats& w, double samples_per_s, bool sequence) {
  row->train_loss = w.loss();
  if (!sequence) row->train_acc = w.acc();
  if (samples_per_s > 0) row->samples_per_s = samples_per_s;  // none: no step (a job that only evaluated)
  row->set_times(w.times);
}

void add_scores(io::MetricsRow* row, ScoreSet set, const EvalResult& ev) {
  if (ev.count == 0) return;
  const bool val = set == ScoreSet::kVal;
  (val ? row->val_loss : row->test_loss) = ev.loss;
  if (ev.sequence) {
    (val ? row->val_cer : row->test_cer) = ev.cer;
    (val ? row->val_wer : row->test_wer) = ev.wer;
    return;
  }
  (val ? row->val_acc : row->test_acc) = ev.accuracy;
  (val ? row->val_f1 : row->test_f1) = ev.macro_f1;
}

}  // namespace lockstep

namespace lockstep {

std::string train_line(const io::MetricsRow& r, int64_t epochs, int64_t step_in_epoch, int64_t steps_per_epoch,
                       int64_t steps) {
  const std::string scale =
      r.loss_scale ? fmt::format(" loss-scale {:g} skipped {}", *r.loss_scale, r.skipped_steps.value_or(0)) : "";
  return fmt::format("epoch {}/{} step {}/{} loss {:.4f}{} lr {:.4g} {:.0f} samples/s{}; {}", r.epoch, epochs,
                     step_in_epoch, steps_per_epoch, r.train_loss.value_or(NAN), acc_text(r), r.lr.value_or(0),
                     r.samples_per_s.value_or(0), scale, times_of(r).summary(steps));
}

std::string val_text(const io::MetricsRow& r) {
  if (r.val_cer && r.val_wer)
    return fmt::format(" val_loss {:.4f} val_cer {:.4f} val_wer {:.4f}", r.val_loss.value_or(0), *r.val_cer, *r.val_wer);
  if (r.val_acc && r.val_f1)
    return fmt::format(" val_loss {:.4f} val_acc {:.4f} val_f1 {:.4f}", r.val_loss.value_or(0), *r.val_acc, *r.val_f1);
  return "";
}

std::string epoch_line(const io::MetricsRow& r, int64_t epochs, int64_t steps) {
  return fmt::format("epoch {}/{} done: loss {:.4f}{}{} {:.0f} samples/s {:.1f} s; {}", r.epoch, epochs,
                     r.train_loss.value_or(NAN), acc_text(r), val_text(r), r.samples_per_s.value_or(0),
                     r.seconds.value_or(0), times_of(r).summary(steps));
}

std::string final_evaluation_line(const TrainPosition& pos, int64_t epochs, int64_t max_steps) {
  std::string past;
  if (pos.epoch > epochs || (pos.epoch == epochs && pos.samples_done_in_epoch > 0))
    past = fmt::format("--train.epochs {}", epochs);
  if (max_steps > 0 && pos.step > max_steps)
    past += fmt::format("{}--train.max-steps {}", past.empty() ? "" : ", ", max_steps);
  if (past.empty())
    return fmt::format("training is complete at step {}, but the run's final evaluation never finished (a stop or a "
                       "kill during it): evaluating now",
                       pos.step);
  return fmt::format("the checkpoint (step {}, epoch {}) is already past this run's end ({}): nothing more to "
                     "train; evaluating its weights now",
                     pos.step, pos.epoch + 1, past);
}

std::string nothing_trained_note(int64_t skipped, int64_t steps) {
  if (steps == 0 || skipped < steps) return "";
  return fmt::format("fp16: the loss scaler skipped every one of this run's {} steps (gradients not finite at every "
                     "scale it tried), so the weights did not change: nothing trained; lower --train.loss-scale "
                     "(65536 by default) or use --train.amp bf16",
                     steps);
}

std::string config_changes(const std::string& then, const std::string& now, bool resumed) {
  if (then.empty()) return "";
  const auto counts = [resumed](const std::string& key) {
    for (const char* section : {"run.", "trace.", "debug.", "doctor."})
      if (key.rfind(section, 0) == 0) return false;
    for (const char* k : {"train.threads", "train.log-every", "train.progress", "train.tensorboard", "data.prefetch",
                          "data.read-threads"})
      if (key == k) return false;
    // How long and how often: a resume that trains further raises them by design.
    if (resumed)
      for (const char* k : {"train.epochs", "train.max-steps", "ckpt.every", "train.eval-every"})
        if (key == k) return false;
    return true;
  };
  std::map<std::string, std::string> old, fresh;
  for (const IniEntry& e : parse_ini(then, "config.ini")) old[e.key] = e.value;
  for (const IniEntry& e : parse_ini(now, "the resolved config")) fresh[e.key] = e.value;
  std::vector<std::string> changes;
  for (const auto& [key, value] : fresh) {
    const auto it = old.find(key);  // a key the older file lacks (an upgrade's new option) is no change
    if (counts(key) && it != old.end() && it->second != value) changes.push_back(key + " " + it->second + " -> " + value);
  }
  std::string out;
  for (size_t i = 0; i < changes.size() && i < 6; ++i) out += (i ? ", " : "") + changes[i];
  if (changes.size() > 6) out += fmt::format(", ... ({} in all)", changes.size());
  return out;
}

}  // namespace lockstep
