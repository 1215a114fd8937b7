// eval_report: see eval_report.hpp.
#include "core/eval/eval_report.hpp"

#include <fmt/format.h>

#include "core/base/log.hpp"

namespace lockstep {

std::string unaligned_note(const EvalResult& ev) {
  if (ev.unaligned == 0) return "";
  return fmt::format(" ({} of them cannot be aligned, a transcript needing more frames than the model outputs: not "
                     "in the loss)",
                     ev.unaligned);
}

void log_eval(const char* what, int64_t step, const std::string& split, const EvalResult& ev, int64_t classes,
              const std::vector<std::string>& class_names, bool detail, const std::string& note) {
  if (ev.count == 0) return;
  if (ev.sequence) {
    log::info0(fmt::format("{} at step {} on '{}' ({} samples{}): loss {:.4f} CER {:.4f} WER {:.4f}{}", what, step, split,
                           ev.count, note, ev.loss, ev.cer, ev.wer, unaligned_note(ev)));
    return;
  }
  log::info0(fmt::format("{} at step {} on '{}' ({} samples{}): loss {:.4f} accuracy {:.4f} macro-F1 {:.4f}", what,
                         step, split, ev.count, note, ev.loss, ev.accuracy, ev.macro_f1));
  if (detail) log_eval_tables(ev, classes, class_names);
}

void log_eval_tables(const EvalResult& ev, int64_t classes, const std::vector<std::string>& class_names) {
  log::info0("per-class metrics:\n" + per_class_table(ev.metrics, ev.confusion, class_names));
  log::info0("confusion matrix (rows: true class, columns: predicted):\n" + confusion_table(ev.confusion, classes));
}

}  // namespace lockstep
