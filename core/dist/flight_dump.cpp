// flight_dump: see flight_dump.hpp.
#include "core/dist/flight_dump.hpp"

#include <chrono>
#include <thread>

#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/dist/flight_recorder.hpp"
#include "io/util/file_util.hpp"

namespace lockstep {
namespace {

std::string record_path(const std::string& dir, int rank) { return dir + "/rank-" + std::to_string(rank) + ".json"; }

// The fresh records in DIR (written at SINCE or later), unreadable ones skipped.
std::vector<FlightDump> fresh_records(const std::string& dir, int world, double since) {
  std::vector<FlightDump> out;
  for (int r = 0; r < world; ++r) {
    const std::string path = record_path(dir, r);
    if (!io::path_exists(path)) continue;
    try {
      FlightDump d = parse_flight_dump(io::read_text_file(path), path);
      if (d.dumped >= since && d.rank == r) out.push_back(std::move(d));
    } catch (const Error&) {
      // half-visible or foreign file: not a record of this event
    }
  }
  return out;
}

}  // namespace

void write_flight_dump(const std::string& dir, int rank, const std::string& json) {
  io::make_dirs(dir);
  io::write_file_atomic(record_path(dir, rank), json);
}

std::optional<std::vector<std::string>> diagnose_flight_dir(const std::string& dir, int rank, int world, double since,
                                                            double grace, FlightCause cause) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(grace);
  std::vector<FlightDump> dumps = fresh_records(dir, world, since);
  while (static_cast<int>(dumps.size()) < world && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    dumps = fresh_records(dir, world, since);
  }
  for (const FlightDump& d : dumps)
    if (d.rank < rank) return std::nullopt;  // a lower rank answered: it prints
  return diagnose_flight(dumps, world, job_seconds(), cause);
}

}  // namespace lockstep
