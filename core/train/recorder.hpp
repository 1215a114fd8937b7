// recorder: everything only rank 0 does with a run's outputs, behind one interface, so
// the training loop never asks which rank it is on.
//
// Rank0Recorder owns the run directory (io/run_dir: one job per directory, a replaced
// directory noticed, killed writers' temp files removed), config.ini and command.txt,
// train.log, metrics.jsonl (rows past the start step dropped: io/records/metrics_log), the
// TensorBoard events, the background checkpoint writer and the terminal progress bar.
// NullRecorder, on every other rank, does nothing.
//
// open_recorder is collective: rank 0 takes the directory's lock and every rank learns
// whether it got it, so a busy directory fails alike everywhere, before anything is
// written or read from it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/config/config.hpp"
#include "core/base/progress.hpp"
#include "io/records/metrics_row.hpp"

namespace lockstep {

class MpiRuntime;

class Recorder {
 public:
  virtual ~Recorder() = default;
  // The run starts at START_STEP (0, or the step of the checkpoint it resumes): opens
  // the run's files. Rows a crashed run wrote past START_STEP are dropped, and so are the
  // rows at START_STEP of an end work of OPEN_EPOCH (1-based: the epoch the resumed
  // checkpoint is still in; 0 for a fresh start) that its checkpoint never recorded
  // (io/records/metrics_log.hpp).
  virtual void start(int64_t start_step, int64_t open_epoch) = 0;
  // Rank 0: the job's config.ini, command.txt and start row (its step, world size, versions and
  // TO_STEP, the step it trains to), once it has work to do. A re-run of a finished run with
  // other options rewrote config.ini (report named the run by options it never trained
  // with), and its start row after the end row made the run look cut after its end.
  virtual void record_job(int64_t /*to_step*/) {}
  // Rank 0, a job with nothing to train (the run ended): warns when this job's options differ
  // from those config.ini says the run was trained with (a hand-run sweep into one run
  // directory reported the first run's result as each command's). Never throws.
  virtual void note_options_unused() {}
  // Rank 0: metrics.jsonl held an end row at START_STEP (metrics_log.hpp); false elsewhere.
  virtual bool ended() const = 0;
  // One metrics.jsonl row and its TensorBoard scalars (io/records/metrics_row.hpp).
  virtual void row(const io::MetricsRow& row) = 0;
  // Checkpoints go to disk on a background thread, in order (checkpoint_writer.hpp):
  // temp file, fsync, rename; then the step checkpoints are pruned to KEEP_LAST valid
  // ones. PAYLOAD makes the bytes, on that thread (a StateSnapshot's serialize(): the
  // training thread only queued the copies). A write error, or PAYLOAD's, surfaces at the
  // next call or at wait_checkpoints().
  using Payload = std::function<std::string()>;
  virtual void write_checkpoint(int64_t step, std::string meta, Payload payload, int keep_last) = 0;
  virtual void write_best(std::string meta, Payload payload) = 0;
  virtual void wait_checkpoints() = 0;
  // RUN_DIR/resumable: this run stopped at a durable checkpoint of STEP and --resume auto
  // continues it (the Slurm templates requeue on it, whatever exit code srun reports).
  // Removed by start().
  virtual void mark_resumable(int64_t step) = 0;
  virtual bool progress_due() const = 0;
  virtual void progress(const Progress& p) = 0;
};

std::unique_ptr<Recorder> open_recorder(const Config& cfg, const MpiRuntime& mpi);

std::string checkpoint_dir(const Config& cfg);

}  // namespace lockstep
