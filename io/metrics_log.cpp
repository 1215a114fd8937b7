// metrics_log: see metrics_log.hpp.
#include "io/metrics_log.hpp"

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace lockstep::io {

MetricsLog::MetricsLog(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "a");
  if (!file_) throw Error("cannot open " + path + " for appending: " + std::strerror(errno));
}

MetricsLog::~MetricsLog() {
  if (file_) std::fclose(file_);
}

void MetricsLog::write(const JsonObject& row) {
  const std::string line = row.str() + "\n";
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0)
    throw Error("cannot write " + path_ + ": " + std::strerror(errno));
}

}  // namespace lockstep::io
