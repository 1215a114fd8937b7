// flight_dump: where ranks leave their flight records (flight_recorder.hpp) and how one of
// them turns the records into a diagnosis, through files (the network may be what hangs).
//
// 1. write_flight_dump(): DIR/rank-R.json, written atomically (write_file_atomic).
// 2. diagnose_flight_dir(): waits up to GRACE seconds until every rank's record newer than
//    SINCE is there (a stopped or dead rank never writes one), then returns the diagnosis,
//    or nothing when a lower rank with a fresh record will print it ("rank 0, or the first
//    rank that can").
// The directory is the run directory's flight/ (on the shared file system every rank
// sees); each rank removes its own stale record when the run starts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/dist/flight_recorder.hpp"

namespace lockstep {

void write_flight_dump(const std::string& dir, int rank, const std::string& json);
std::optional<std::vector<std::string>> diagnose_flight_dir(const std::string& dir, int rank, int world, double since,
                                                            double grace, FlightCause cause = FlightCause::kHang);

}  // namespace lockstep
