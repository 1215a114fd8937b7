// Fuzz target: metrics.jsonl as a resumed run repairs it (io/records/metrics_log).
#include <string>

#include "fuzz_input.hpp"
#include "io/records/metrics_log.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const std::string text(reinterpret_cast<const char*>(data), size);
  int64_t dropped = 0;
  const std::string kept = io::keep_metrics_rows(text, 100, &dropped);
  // Kept rows are whole lines: keeping again drops nothing.
  if (io::keep_metrics_rows(kept, 100, &dropped) != kept || dropped != 0) __builtin_trap();
  return 0;
}
