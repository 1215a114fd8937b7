// metrics_log: RUN_DIR/metrics.jsonl, one JSON object per line, every row carrying the
// global "step" it describes. Opened by rank 0 only (the recorder's rule).
//
// A valid log across any crash and resume:
// 1. each row is one write(2) on an O_APPEND descriptor, so a crash leaves at most one
//    partial line, at the end of the file;
// 2. opening for a run that starts at step S (0 for a fresh start, the checkpoint's step
//    on resume) first keeps only the complete, parseable rows with step <= S and drops
//    the rest — the rows a crashed or stopped run wrote past its last durable checkpoint,
//    which the resumed run writes again. So train rows never repeat or go backwards, and
//    an "end" row survives only for a run that did end (a run that is extended past it
//    writes a new one). An epoch row at S of the epoch the checkpoint is still in
//    (OPEN_EPOCH, 1-based as the rows count) is an end work whose checkpoint never landed
//    (its rewrite of the checkpoint would have rolled the epoch over): killed in between,
//    or the world changed so that the epoch no longer ends at S. It and the evaluation,
//    test and end rows after it at S are dropped; the run does that work again or trains
//    on. A run at step 0 drops such rows at step 0 (the --init-from validation of a run
//    killed before its first checkpoint: it validates again). A test row at S that no end row
//    follows is a final work cut between the two (finish_trained does it again): it goes. The
//    file is rewritten atomically when anything is dropped;
// 3. the file is never written through a symbolic link.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/records/metrics_row.hpp"

namespace lockstep::io {

class MetricsLog {
 public:
  // Throws naming PATH. DROPPED (optional) receives how many rows were dropped.
  MetricsLog(const std::string& path, int64_t start_step, int64_t* dropped = nullptr, int64_t open_epoch = 0);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  void write(const std::string& row);  // one JSON object, no newline
  // The log kept an "end" row at the start step, after the other end-work rows there: the run
  // it resumes did finish (its final evaluation included). A run whose training is complete
  // without one was stopped or killed during its final evaluation, and does it now.
  bool ended() const { return ended_; }
  // The rows kept at the start step, in order (what TensorBoard is given again: recorder.cpp).
  // A row that does not read as a MetricsRow (edited by hand) is left out.
  const std::vector<MetricsRow>& rows_at_start() const { return at_start_; }
  // Whole lines the file held that are no row of lockstep's (a note typed into it), removed
  // with the rows past the start step but not counted among them: "line 3: 'my note'".
  const std::vector<std::string>& foreign_lines() const { return foreign_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool ended_ = false;
  std::vector<MetricsRow> at_start_;
  std::vector<std::string> foreign_;
};

// The rows of TEXT (a metrics.jsonl) that a run starting at START_STEP keeps, as the class
// comment says (OPEN_EPOCH: as there; 0: none). ENDED (optional): as MetricsLog::ended.
// FOREIGN (optional): the whole lines that are no row, as MetricsLog::foreign_lines; DROPPED
// counts the rows dropped (and a last line a crash cut), not those.
std::string keep_metrics_rows(const std::string& text, int64_t start_step, int64_t* dropped, bool* ended = nullptr,
                              int64_t open_epoch = 0, std::vector<std::string>* foreign = nullptr);

}  // namespace lockstep::io
