// recorder: see recorder.hpp.
#include "core/train/recorder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>
#include <vector>

#include "core/train/checkpoint_writer.hpp"
#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/config/ini_text.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/dist/version_info.hpp"
#include "core/train/run_rows.hpp"
#include "io/records/checkpoint_store.hpp"
#include "io/util/file_util.hpp"
#include "io/records/metrics_log.hpp"
#include "io/records/run_dir.hpp"
#include "io/records/tb_writer.hpp"

namespace lockstep {
namespace {

class NullRecorder final : public Recorder {
 public:
  void start(int64_t, int64_t) override {}
  bool ended() const override { return false; }
  void row(const io::MetricsRow&) override {}
  void write_checkpoint(int64_t, std::string, Payload, int) override {}
  void write_best(std::string, Payload) override {}
  void wait_checkpoints() override {}
  void mark_resumable(int64_t) override {}
  bool progress_due() const override { return false; }
  void progress(const Progress&) override {}
};

// The resolved config as TensorBoard hyper-parameters (numbers, flags, texts), without the
// operational keys (debug.*, trace.*) that are no hyper-parameters.
std::vector<io::TbWriter::HParam> hparams(const std::string& resolved_ini) {
  std::vector<io::TbWriter::HParam> out;
  for (const IniEntry& e : parse_ini(resolved_ini, "the resolved config")) {
    if (e.key.rfind("debug.", 0) == 0 || e.key.rfind("trace.", 0) == 0) continue;
    io::TbWriter::HParam h;
    h.name = e.key;
    char* end = nullptr;
    const double v = e.value.empty() ? 0.0 : std::strtod(e.value.c_str(), &end);
    if (!e.value.empty() && end && *end == '\0' && std::isfinite(v)) {
      h.kind = io::TbWriter::HParam::Kind::kNumber;
      h.number = v;
    } else if (e.value == "true" || e.value == "false") {
      h.kind = io::TbWriter::HParam::Kind::kBool;
      h.flag = e.value == "true";
    } else {
      h.text = e.value;
    }
    out.push_back(std::move(h));
  }
  return out;
}

class Rank0Recorder final : public Recorder {
 public:
  // train.log from here on, the directory being this job's: a resume's lines (which checkpoint,
  // the schedule's count, a learning rate that jumps) come before start() and belong in it.
  Rank0Recorder(const Config& cfg, const MpiRuntime& mpi, std::unique_ptr<io::RunDir> dir)
      : cfg_(cfg), mpi_(mpi), dir_(std::move(dir)), bar_(log::interactive()) {
    LOCKSTEP_REQUIRE(log::set_file(cfg_.run_dir + "/train.log"),
                     "cannot append to " + cfg_.run_dir + "/train.log (a symbolic link, or not writable)");
  }

  ~Rank0Recorder() override {
    writer_.reset();  // waits for a write in flight before the directory lock is released
    log::set_file("");
  }

  void start(int64_t start_step, int64_t open_epoch) override {
    start_step_ = start_step;
    start_epoch_ = open_epoch > 0 ? open_epoch - 1 : 0;  // 0-based, as row_at takes it
    for (const std::string& t : dir_->removed_temps()) log::info0("removed " + t + " (left by a killed writer)");
    for (const std::string& t : dir_->kept_temps())
      log::warn0("kept " + t + ": its writer (named in the file name) may still be running on another host or "
                 "under that pid; remove it by hand once no job writes " + cfg_.run_dir);
    io::remove_file(cfg_.run_dir + "/resumable");
    int64_t dropped = 0;
    metrics_ = std::make_unique<io::MetricsLog>(cfg_.run_dir + "/metrics.jsonl", start_step, &dropped, open_epoch);
    const auto& foreign = metrics_->foreign_lines();
    for (size_t i = 0; i < foreign.size() && i < 5; ++i)
      log::warn0("metrics.jsonl: removed " + foreign[i] + ", which is no row lockstep writes (an edit?)");
    if (foreign.size() > 5) log::warn0(fmt::format("metrics.jsonl: and {} more such line(s)", foreign.size() - 5));
    if (dropped > 0)
      log::info0("metrics.jsonl: dropped " + std::to_string(dropped) + " row(s) past step " + std::to_string(start_step) +
                 (open_epoch > 0 ? " or of an end work its checkpoint did not record" : "") +
                 " (written after the last checkpoint by an earlier run; this run writes them again)");
    writer_ = std::make_unique<CheckpointWriter>();
  }

  void note_options_unused() override {
    try {
      const std::string ini = cfg_.run_dir + "/config.ini";
      if (!io::path_exists(ini)) return;
      if (const std::string changes = config_changes(io::read_text_file(ini), cfg_.resolved_ini); !changes.empty())
        log::warn0("this command's options differ from those the run in " + cfg_.run_dir + " was trained with (" +
                   changes + "): nothing was trained with them; a new run needs another --run.dir");
    } catch (const Error& e) {  // a note: an unreadable config.ini changes nothing of the job
      log::warn0("cannot compare this command's options with " + cfg_.run_dir + "/config.ini: " + e.what());
    }
  }

  void record_job(int64_t to_step) override {
    io::write_file_atomic(cfg_.run_dir + "/config.ini", cfg_.resolved_ini);
    io::write_file_atomic(cfg_.run_dir + "/command.txt", cfg_.command_line + "\n");
    io::MetricsRow start = row_at(io::RowKind::kStart, start_epoch_, start_step_);
    start.world_size = mpi_.size();
    start.to_step = to_step;
    start.versions = version_items();
    row(start);
  }

  bool ended() const override { return metrics_ && metrics_->ended(); }

  void row(const io::MetricsRow& row) override {
    dir_->check();
    metrics_->write(io::dump_json(row.to_json()));
    io::TbWriter* tb = tensorboard();
    if (!tb) return;
    const auto s = row.scalars();
    if (!s.empty()) tb->scalars(row.step, s);
    if (row.kind == io::RowKind::kEnd) tb->hparams_end(/*success=*/true);
  }

  // The job's TensorBoard writer, opened with its first row: a job with nothing to do (a
  // finished run started again) adds no event file (one per such job, each an HParams
  // session that never ended: a hostile finding).
  io::TbWriter* tensorboard() {
    if (!cfg_.tensorboard) return nullptr;
    if (tb_) return tb_.get();
    tb_ = std::make_unique<io::TbWriter>(cfg_.run_dir + "/tb", mpi_.host());
    // TensorBoard drops what earlier event files hold at or past the start step: the rows an
    // earlier job wrote past its checkpoint, and rows at the step this job writes again (a redone
    // end work: its points appeared twice). The rows kept there go in again, from metrics.jsonl.
    tb_->session_start(start_step_);
    for (const io::MetricsRow& r : metrics_->rows_at_start())
      if (const auto s = r.scalars(); !s.empty()) tb_->scalars(r.step, s);
    tb_->hparams_start(hparams(cfg_.resolved_ini));
    return tb_.get();
  }

  void write_checkpoint(int64_t step, std::string meta, Payload make_payload, int keep_last) override {
    const auto t0 = Clock::now();
    const std::string ckpt = checkpoint_dir(cfg_);
    writer_->submit([this, ckpt, step, keep_last, t0, meta = std::move(meta), make_payload = std::move(make_payload)] {
      const std::string payload = make_payload();
      dir_->check();
      const std::string path = io::write_checkpoint(ckpt, step, meta, payload);
      written_.push_back(path);  // the writer thread's own list: checksummed by this process
      for (const std::string& gone : io::prune_checkpoints(ckpt, keep_last, written_))
        written_.erase(std::remove(written_.begin(), written_.end(), gone), written_.end());
      log::info0("checkpoint " + path + " (" + fmt::format("{:.1f}", static_cast<double>(payload.size()) / 1e6) + " MB, " +
                 fmt::format("{:.2f}", seconds_since(t0)) + " s, written in the background)");
    });
  }

  void write_best(std::string meta, Payload make_payload) override {
    const std::string path = checkpoint_dir(cfg_) + "/best.ckpt";
    writer_->submit([this, path, meta = std::move(meta), make_payload = std::move(make_payload)] {
      const std::string payload = make_payload();
      dir_->check();
      io::write_checkpoint_file(path, meta, payload);
    });
  }

  void wait_checkpoints() override {
    if (writer_) writer_->wait();
  }

  void mark_resumable(int64_t step) override {
    dir_->check();
    io::write_file_atomic(cfg_.run_dir + "/resumable", "step " + std::to_string(step) + "\n");
  }

  bool progress_due() const override { return bar_ && seconds_since(last_bar_) >= 0.2; }

  void progress(const Progress& p) override {
    if (!bar_) return;
    last_bar_ = Clock::now();
    log::progress0(progress_line(p));
  }

 private:
  const Config& cfg_;
  const MpiRuntime& mpi_;
  std::unique_ptr<io::RunDir> dir_;
  std::unique_ptr<io::MetricsLog> metrics_;
  int64_t start_step_ = 0, start_epoch_ = 0;  // where this job starts (start())
  std::unique_ptr<io::TbWriter> tb_;
  std::vector<std::string> written_;
  bool bar_;
  Clock::time_point last_bar_{};
  std::unique_ptr<CheckpointWriter> writer_;  // last: destroyed (joined) first
};

}  // namespace

std::string checkpoint_dir(const Config& cfg) { return cfg.run_dir + "/checkpoints"; }

std::unique_ptr<Recorder> open_recorder(const Config& cfg, const MpiRuntime& mpi) {
  std::unique_ptr<io::RunDir> dir;
  std::string problem;
  bool busy = false;
  if (mpi.rank() == 0) {
    try {
      dir = std::make_unique<io::RunDir>(cfg.run_dir);
    } catch (const io::DirRefused& e) {
      problem = e.what();
      busy = true;
    } catch (const Error& e) {
      problem = e.what();
    }
  }
  problem = mpi.broadcast_string(problem + (busy ? "B" : "E"), 0);
  const char how = problem.back();
  problem.pop_back();
  if (!problem.empty()) {
    if (how == 'B') throw UsageError(problem);
    throw Error(problem);
  }
  // Flight records (a hang, SIGUSR2) go into the run directory only now that this job holds
  // it: a refused duplicate job must not remove the records of the job that holds it.
  mpi.set_flight_dir(cfg.run_dir + "/flight");
  if (mpi.rank() != 0) return std::make_unique<NullRecorder>();
  return std::make_unique<Rank0Recorder>(cfg, mpi, std::move(dir));
}

}  // namespace lockstep
