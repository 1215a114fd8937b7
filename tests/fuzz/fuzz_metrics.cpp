// Fuzz target: the run directory's files lockstep reads back — metrics.jsonl as a resumed
// run repairs it (io/records/metrics_log), the lock file's holder text and the temp-file
// mark on file names (io/util/dir_lock, temp_files: what decides whether a file is removed).
#include <string>

#include "fuzz_input.hpp"
#include "io/records/metrics_log.hpp"
#include "io/util/dir_lock.hpp"
#include "io/util/temp_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const std::string text(reinterpret_cast<const char*>(data), size);
  int64_t dropped = 0;
  // Kept rows are whole lines: keeping again drops nothing; also when an end work of epoch 1
  // at step 100 that its checkpoint never recorded is dropped.
  for (int64_t open_epoch : {0, 1}) {
    bool ended = false;
    const std::string kept = io::keep_metrics_rows(text, 100, &dropped, &ended, open_epoch);
    if (io::keep_metrics_rows(kept, 100, &dropped, nullptr, open_epoch) != kept || dropped != 0) __builtin_trap();
    if (kept.size() > text.size()) __builtin_trap();
  }
  // Any lock file text: a writer or none, never an exception.
  const io::Writer holder = io::parse_lock_holder(text);
  if (holder.pid < 0 || (holder.pid > 0 && holder.host.empty())) __builtin_trap();
  // Any file name: lockstep's mark or not; a marked name parses back to its writer.
  io::Writer who;
  std::string target;
  if (io::parse_temp_name(text, &who, &target)) {
    if (who.pid <= 0 || who.host.empty() || target.empty()) __builtin_trap();
    const std::string again = target + ".lockstep-tmp." + std::to_string(who.pid) + "." + who.host;
    io::Writer back;
    if (!io::parse_temp_name(again, &back) || !(back == who)) __builtin_trap();
  }
  return 0;
}
