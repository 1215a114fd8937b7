// metrics_log: see metrics_log.hpp.
#include "io/records/metrics_log.hpp"

#include <unistd.h>

#include <string>
#include <vector>


#include "core/base/error.hpp"
#include "io/records/metrics_row.hpp"
#include "io/util/file_util.hpp"
#include "io/util/json_io.hpp"

namespace lockstep::io {

namespace {

bool row_kind_is(const Json& row, RowKind kind) {
  return row.contains("kind") && row["kind"].is_string() && row["kind"].get<std::string>() == row_kind_name(kind);
}

// The kinds of row an epoch's end work writes (a train or start row at that step is the step's).
bool end_work_row(const Json& row) {
  for (RowKind k : {RowKind::kEval, RowKind::kEpoch, RowKind::kTest, RowKind::kEnd})
    if (row_kind_is(row, k)) return true;
  return false;
}

// The rows of TEXT (whole lines, each a JSON object) at STEP that read as metrics rows.
std::vector<MetricsRow> rows_at(const std::string& text, int64_t step, const std::string& path) {
  std::vector<MetricsRow> rows;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    const Json j = Json::parse(text.substr(pos, nl - pos), nullptr, /*allow_exceptions=*/false);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    int64_t at = 0;
    if (!j.is_object() || !j.contains("step") || !json_integer(j["step"], &at) || at != step) continue;
    try {
      rows.push_back(MetricsRow::from_json(j, path));
    } catch (const Error&) {  // a field of the wrong type: not a row this file's writer wrote
    }
  }
  return rows;
}

}  // namespace

std::string keep_metrics_rows(const std::string& text, int64_t start_step, int64_t* dropped, bool* ended,
                              int64_t open_epoch, std::vector<std::string>* foreign) {
  int64_t line_number = 0;
  std::vector<std::string> kept;
  std::vector<size_t> unended_tests;  // test rows at START_STEP no end row has followed yet
  int64_t n_dropped = 0;
  bool end_kept = false;
  bool stale = false;  // an epoch row of OPEN_EPOCH at START_STEP came before: its end work did not land
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {  // a partial last line: the write a crash cut short
      ++n_dropped;
      break;
    }
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_number;
    if (line.empty()) continue;
    const Json row = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!holds_metrics_row(row)) {  // no row of lockstep's: said as what it is
      if (foreign) foreign->push_back(foreign_line_note(line, line_number));
      continue;
    }
    int64_t step = 0;
    bool keep = row.is_object() && row.contains("step") && row["step"].is_number_integer() &&
                json_integer(row["step"], &step) && step <= start_step;
    int64_t epoch = 0;
    if (keep && step == start_step && open_epoch > 0 && row_kind_is(row, RowKind::kEpoch) && row.contains("epoch") &&
        json_integer(row["epoch"], &epoch) && epoch == open_epoch)
      stale = true;
    // At step 0 nothing is a checkpoint's: a run there does its --init-from validation again.
    keep = keep && !((stale || start_step == 0) && step == start_step && end_work_row(row));
    if (!keep) {
      ++n_dropped;
      continue;
    }
    if (step == start_step && end_work_row(row)) {
      // Ended: the last end-work row at the start step is an end row (a redo's rows after an
      // earlier end row there mean that redo never finished, and the resume does it).
      end_kept = row_kind_is(row, RowKind::kEnd);
      if (end_kept) unended_tests.clear();  // the final work they belong to finished
      if (row_kind_is(row, RowKind::kTest)) unended_tests.push_back(kept.size());
    }
    kept.push_back(line);
  }
  // A test row with no end row after it: the final work was cut between them, and the resume
  // does it again (its test row included).
  for (size_t i : unended_tests) kept[i].clear();
  n_dropped += static_cast<int64_t>(unended_tests.size());
  std::string out;
  for (const std::string& line : kept)
    if (!line.empty()) out += line + "\n";
  if (dropped) *dropped = n_dropped;
  if (ended) *ended = end_kept;
  return out;
}

MetricsLog::MetricsLog(const std::string& path, int64_t start_step, int64_t* dropped, int64_t open_epoch)
    : path_(path) {
  LOCKSTEP_REQUIRE(!is_symlink(path), path + " is a symbolic link: lockstep does not write through links in a run directory");
  int64_t n = 0;
  if (path_exists(path)) {
    const std::string text = read_text_file(path);
    const std::string kept = keep_metrics_rows(text, start_step, &n, &ended_, open_epoch, &foreign_);
    if (kept.size() != text.size()) write_file_atomic(path, kept);
    at_start_ = rows_at(kept, start_step, path);
  }
  if (dropped) *dropped = n;
  fd_ = open_append_nofollow(path);
}

MetricsLog::~MetricsLog() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsLog::write(const std::string& row) { write_all(fd_, row + "\n", path_); }

}  // namespace lockstep::io
