// flight_recorder: the last collectives of this rank, kept for when something hangs, and
// the cross-rank diagnosis made from several ranks' records.
//
// 1. The watchdog (watchdog.hpp) records every collective it watches: begin() when the
//    rank enters it (a sequence number: the N-th collective of this rank; every rank runs
//    the same collectives in the same order, so equal numbers are the same operation on
//    every rank), end() when it completes or fails. The last CAPACITY entries are kept.
// 2. to_json() is the dump: rank, host, and each entry's sequence number, what it is
//    (kind and size, e.g. "gradient bucket 0 (1.6 MB)", "MPI_Allreduce (sum) of 6
//    doubles"), start and end (unix seconds on the job clock, clock.hpp: comparable across
//    ranks and never stepped), state (running, done, failed).
// 3. diagnose() reads the dumps of the ranks that could write one (a stopped or killed rank
//    cannot): where each rank is — the collective it is in, or the last one it finished —
//    which ranks are behind the others, and which ranks left no record.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace lockstep {

class FlightRecorder {
 public:
  struct Entry {
    uint64_t seq;
    std::string what;
    double start, end = 0;  // job clock (unix seconds); end 0 while running
    int state = 0;          // 0 running, 1 done, 2 failed
  };
  explicit FlightRecorder(size_t capacity = 4096) : capacity_(capacity) {}
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  uint64_t begin(const std::string& what);  // the sequence number, from 1
  void end(uint64_t seq, bool failed = false);
  std::string to_json(int rank, const std::string& host) const;
  std::vector<Entry> entries() const;  // a copy, oldest first

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::deque<Entry> entries_;
  uint64_t next_ = 1;
};

// What diagnose() needs of one rank's dump.
struct FlightDump {
  int rank = 0;
  std::string host;
  double dumped = 0;         // job clock (unix seconds)
  uint64_t last_done = 0;    // the last collective it finished (0: none)
  uint64_t running = 0;      // the collective it is in (0: none)
  std::string running_what, last_what;
  double running_since = 0;  // job clock (unix seconds)
};

// Parses a to_json() text; throws Error naming WHAT when it is not one.
FlightDump parse_flight_dump(const std::string& json, const std::string& what);

// Why records were dumped. On a hang (the watchdog) a rank without a record is stopped,
// killed or stuck. On a request (SIGUSR2) it may simply not have been asked: a signal to
// one rank yields one record, and nothing is concluded about the others.
enum class FlightCause { kHang, kRequest };

// Lines of diagnosis for a job of WORLD ranks from the DUMPS that exist (any order, at
// most one per rank). A wait is dated at its record's dump time (NOW when a record has
// none), never at the time of the diagnosis.
std::vector<std::string> diagnose_flight(const std::vector<FlightDump>& dumps, int world, double now,
                                         FlightCause cause = FlightCause::kHang);

}  // namespace lockstep
