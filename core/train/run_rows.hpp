// run_rows: a training run's metrics rows, built from the run's own types (log-window and
// epoch statistics, evaluations) into the one schema of io/records/metrics_row.hpp. The
// trainer decides when a row is written; this file decides what goes in it.
#pragma once

#include <cstdint>
#include <string>

#include "core/eval/evaluator.hpp"
#include "core/train/checkpoint_state.hpp"
#include "core/train/epoch_stats.hpp"
#include "io/records/metrics_row.hpp"

namespace lockstep {

// A row of KIND for 0-based EPOCH at global STEP.
io::MetricsRow row_at(io::RowKind kind, int64_t epoch, int64_t step);
// W's mean loss (and accuracy, unless SEQUENCE: a CTC model's training accuracy means
// nothing), throughput and time breakdown.
void add_training(io::MetricsRow* row, const WindowStats& w, double samples_per_s, bool sequence);
// EV's loss, accuracy and F1 (or, for sequences, loss, CER and WER) as ROW's validation or
// test scores; nothing when EV counted no samples.
enum class ScoreSet { kVal, kTest };
void add_scores(io::MetricsRow* row, ScoreSet set, const EvalResult& ev);

// Rank 0's train and epoch lines, rendered from the rows they report, so the log, metrics.jsonl
// and TensorBoard show the same numbers. STEPS: the optimizer steps the row's times cover.
// "epoch 2/10 step 50/57 loss 0.4321 acc 0.8750 lr 0.05 2300 samples/s; data wait ..."
std::string train_line(const io::MetricsRow& row, int64_t epochs, int64_t step_in_epoch, int64_t steps_per_epoch,
                       int64_t steps);
// " val_loss 0.2500 val_acc 0.9000 val_f1 0.8500" (CER and WER for sequences): ROW's
// validation scores as the log shows them; "" when it has none.
std::string val_text(const io::MetricsRow& row);
// "epoch 2/10 done: loss 0.4321 acc 0.8750 val_loss ... 2300 samples/s 12.3 s; data wait ..."
std::string epoch_line(const io::MetricsRow& row, int64_t epochs, int64_t steps);
// What a resumed run at POS with nothing left to train does now, its final evaluation never
// having run: either that evaluation was stopped or killed, or POS is already past this run's
// end (--train.epochs EPOCHS, --train.max-steps MAX_STEPS: lowered since), which it names.
std::string final_evaluation_line(const TrainPosition& pos, int64_t epochs, int64_t max_steps);
// fp16: when the loss scaler skipped all STEPS of this process's run (SKIPPED of them; a start
// scale far above what the gradients bear, halved once per skip and never down to a finite
// step), the warning that nothing trained; "" otherwise (the stall at the scale's floor of 1
// stops a run before: loss_scaler.hpp).
std::string nothing_trained_note(int64_t skipped, int64_t steps);
// The options of the resolved config NOW that differ from THEN's (the run directory's
// config.ini, "" when absent), "train.lr 0.05 -> 0.5, train.seed 42 -> 7" (at most 6),
// leaving out those that change no result (run.*, trace.*, debug.*, threads, logging) and
// those THEN lacks (options newer than it); RESUMED (THEN: a checkpoint's), also those a
// resume raises by design (epochs, max-steps, ckpt.every, eval-every). Throws naming a file
// that does not parse.
std::string config_changes(const std::string& then, const std::string& now, bool resumed = false);

}  // namespace lockstep
