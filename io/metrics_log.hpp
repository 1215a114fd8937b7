// metrics_log: metrics.jsonl, one JSON object per line, flushed per row so a job killed
// mid-run keeps every row it reported. Opened by rank 0 only (the trainer's rule).
#pragma once

#include <cstdio>
#include <string>

#include "io/json.hpp"

namespace lockstep::io {

class MetricsLog {
 public:
  explicit MetricsLog(const std::string& path);  // appends; throws naming PATH
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  void write(const JsonObject& row);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace lockstep::io
