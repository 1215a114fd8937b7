// metrics_log: see metrics_log.hpp.
#include "io/records/metrics_log.hpp"

#include <unistd.h>


#include "core/base/error.hpp"
#include "io/records/metrics_row.hpp"
#include "io/util/file_util.hpp"
#include "io/util/json_io.hpp"

namespace lockstep::io {

std::string keep_metrics_rows(const std::string& text, int64_t start_step, int64_t* dropped) {
  std::string out;
  int64_t n_dropped = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {  // a partial last line: the write a crash cut short
      ++n_dropped;
      break;
    }
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) continue;
    const Json row = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    int64_t step = 0;
    const bool keep = row.is_object() && row.contains("step") && row["step"].is_number_integer() &&
                      json_integer(row["step"], &step) && step <= start_step;
    if (keep)
      out += line + "\n";
    else
      ++n_dropped;
  }
  if (dropped) *dropped = n_dropped;
  return out;
}

namespace {

bool has_end_row(const std::string& kept, int64_t step, const std::string& path) {
  size_t pos = 0;
  while (pos < kept.size()) {
    const size_t nl = kept.find('\n', pos);
    const std::string line = kept.substr(pos, nl - pos);
    pos = nl == std::string::npos ? kept.size() : nl + 1;
    try {
      const MetricsRow row = MetricsRow::from_json(Json::parse(line), path);
      if (row.kind == RowKind::kEnd && row.step == step) return true;
    } catch (const std::exception&) {
      // a row of another schema (kept for humans): not an end row
    }
  }
  return false;
}

}  // namespace

MetricsLog::MetricsLog(const std::string& path, int64_t start_step, int64_t* dropped) : path_(path) {
  LOCKSTEP_REQUIRE(!is_symlink(path), path + " is a symbolic link: lockstep does not write through links in a run directory");
  int64_t n = 0;
  if (path_exists(path)) {
    const std::string text = read_text_file(path);
    const std::string kept = keep_metrics_rows(text, start_step, &n);
    if (kept.size() != text.size()) write_file_atomic(path, kept);
    ended_ = has_end_row(kept, start_step, path);
  }
  if (dropped) *dropped = n;
  fd_ = open_append_nofollow(path);
}

MetricsLog::~MetricsLog() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsLog::write(const std::string& row) { write_all(fd_, row + "\n", path_); }

}  // namespace lockstep::io
