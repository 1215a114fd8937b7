// run_report: see run_report.hpp.
#include "core/run_report.hpp"

#include "core/device_memory.hpp"
#include "core/log.hpp"
#include "core/mpi_runtime.hpp"
#include "core/progress.hpp"

namespace lockstep {

void report_eval(const Run& r, const EvalResult& ev, bool detail) {
  if (ev.count == 0 || r.mpi.rank() != 0) return;
  log::info0("validation at step " + std::to_string(r.pos.step) + " on '" + r.cfg.val_split + "' (" +
             std::to_string(ev.count) + " samples): loss " + fmt("%.4f", ev.loss) + " accuracy " +
             fmt("%.4f", ev.accuracy) + " macro-F1 " + fmt("%.4f", ev.macro_f1));
  if (!detail) return;
  log::info0("per-class metrics:\n" + per_class_table(ev.metrics, ev.confusion, r.manifest.spec.class_names));
  log::info0("confusion matrix (rows: true class, columns: predicted):\n" + confusion_table(ev.confusion, r.classes));
}

void report_device_memory(const Run& r) {
  if (!r.place.device.is_cuda()) return;  // the same on every rank (backend choice)
  std::vector<double> peak(static_cast<size_t>(r.mpi.size()), 0.0);
  peak[static_cast<size_t>(r.mpi.rank())] = static_cast<double>(peak_device_bytes(r.place.device));
  reset_peak_device_bytes(r.place.device);
  r.mpi.allreduce_sum(peak.data(), static_cast<int>(peak.size()));
  std::string line = "peak GPU memory per rank:";
  for (size_t i = 0; i < peak.size(); ++i) line += " r" + std::to_string(i) + " " + fmt("%.2f", peak[i] / (1 << 30)) + " GiB";
  log::info0(line);
}

ProgressBar::ProgressBar(const Run& r) : active_(r.mpi.rank() == 0 && log::interactive()), last_(), r_(r) {}  // first step draws

bool ProgressBar::due() const { return active_ && seconds_since(last_) >= 0.2; }

void ProgressBar::update(int64_t epoch, int64_t step, int64_t steps, double loss, double acc, double samples_per_s,
                         int64_t steps_left) {
  if (!active_) return;
  last_ = Clock::now();
  const int64_t global_batch = r_.cfg.batch_size * r_.mpi.size() * r_.cfg.grad_accum;
  Progress p;
  p.epoch = epoch;
  p.epochs = r_.cfg.epochs;
  p.step = step;
  p.steps = steps;
  p.loss = loss;
  p.accuracy = acc;
  p.samples_per_s = samples_per_s;
  p.eta_s = samples_per_s > 0 ? static_cast<double>(steps_left * global_batch) / samples_per_s : -1.0;
  log::progress0(progress_line(p));
}

}  // namespace lockstep
