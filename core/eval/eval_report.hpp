// eval_report: rank 0's lines about an evaluation, the same for training runs and
// `lockstep evaluate` — one summary line, and the per-class table and confusion matrix.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/eval/evaluator.hpp"

namespace lockstep {

// CTC: " (N of them cannot be aligned ...: not in the loss)", "" when every sample aligned.
std::string unaligned_note(const EvalResult& ev);

// "WHAT at step STEP on 'SPLIT' (N samples NOTE): loss ... accuracy ... macro-F1 ..." (CER
// and WER for sequences), then, with DETAIL and class labels, the tables below. Nothing
// when EV counted no samples.
// CLASSES: the dataset's classes (CLASS_NAMES may be empty).
void log_eval(const char* what, int64_t step, const std::string& split, const EvalResult& ev, int64_t classes,
              const std::vector<std::string>& class_names, bool detail, const std::string& note = "");
// The per-class metrics and the confusion matrix (rows: true class) of EV.
void log_eval_tables(const EvalResult& ev, int64_t classes, const std::vector<std::string>& class_names);

}  // namespace lockstep
