// flight_recorder: see flight_recorder.hpp.
#include "core/dist/flight_recorder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/base/clock.hpp"
#include "io/util/json_io.hpp"

namespace lockstep {

uint64_t FlightRecorder::begin(const std::string& what) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.push_back(Entry{next_, what, job_seconds()});
  if (entries_.size() > capacity_) entries_.pop_front();
  return next_++;
}

void FlightRecorder::end(uint64_t seq, bool failed) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
    if (it->seq == seq) {
      it->end = job_seconds();
      it->state = failed ? 2 : 1;
      return;
    }
}

std::string FlightRecorder::to_json(int rank, const std::string& host) const {
  static const char* states[] = {"running", "done", "failed"};
  io::Json j;
  j["rank"] = rank;
  j["host"] = host;
  j["dumped"] = job_seconds();
  j["entries"] = io::Json::array();
  std::lock_guard<std::mutex> lock(mu_);
  for (const Entry& e : entries_)
    j["entries"].push_back({{"seq", e.seq}, {"what", e.what}, {"start", e.start}, {"end", e.end},
                            {"state", states[e.state]}});
  return io::dump_json(j);
}

std::vector<FlightRecorder::Entry> FlightRecorder::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {entries_.begin(), entries_.end()};
}

FlightDump parse_flight_dump(const std::string& json, const std::string& what) {
  const io::Json j = io::parse_json(json, what);
  FlightDump d;
  d.rank = io::json_get<int>(j, "rank", what);
  d.host = io::json_get<std::string>(j, "host", what);
  d.dumped = io::json_get<double>(j, "dumped", what);
  if (!j.contains("entries") || !j["entries"].is_array()) throw Error(what + ": no 'entries' array");
  for (const auto& e : j["entries"]) {
    const auto seq = io::json_get<uint64_t>(e, "seq", what);
    const auto state = io::json_get<std::string>(e, "state", what);
    if (state == "running") {
      if (seq > d.running) {
        d.running = seq;
        d.running_what = io::json_get<std::string>(e, "what", what);
        d.running_since = io::json_get<double>(e, "start", what);
      }
    } else if (seq > d.last_done) {
      d.last_done = seq;
      d.last_what = io::json_get<std::string>(e, "what", what);
    }
  }
  return d;
}

std::vector<std::string> diagnose_flight(const std::vector<FlightDump>& dumps, int world, double now,
                                         FlightCause cause) {
  std::vector<std::string> out;
  std::map<int, const FlightDump*> by_rank;
  for (const FlightDump& d : dumps) by_rank[d.rank] = &d;
  // Where a rank is: the collective it is in, else the last one it finished.
  auto position = [](const FlightDump& d) { return d.running ? d.running : d.last_done; };
  auto waited = [now](const FlightDump& d) { return (d.dumped > 0 ? d.dumped : now) - d.running_since; };
  auto where = [&](const FlightDump& d) {
    return d.running ? fmt::format("in collective {} ({}) for {:.1f} s", d.running, d.running_what, waited(d))
                     : fmt::format("between collectives, the last one finished {} ({})", d.last_done, d.last_what);
  };
  uint64_t front = 0;
  for (const FlightDump& d : dumps) front = std::max(front, position(d));
  std::vector<int> missing;
  for (int r = 0; r < world; ++r)
    if (!by_rank.count(r)) missing.push_back(r);
  const auto list = [](const std::vector<int>& ranks) {
    std::string s;
    for (size_t i = 0; i < ranks.size() && i < 16; ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
    if (ranks.size() > 16) s += fmt::format(" and {} more", ranks.size() - 16);
    return s;
  };
  if (cause == FlightCause::kRequest && !missing.empty()) {
    // A request that reached some ranks only: each record as it is, no comparison.
    std::vector<int> answered;
    for (const auto& [rank, d] : by_rank) {
      out.push_back(fmt::format("rank {} ({}) is {}", rank, d->host, where(*d)));
      answered.push_back(rank);
    }
    out.push_back(fmt::format("only rank(s) {} answered the SIGUSR2 request: a signal to some ranks yields their "
                              "records only, and no stall is concluded from them; for a diagnosis across ranks send "
                              "it to every rank (scancel --signal=USR2 JOBID, or kill -USR2 each rank)",
                              list(answered)));
    return out;
  }
  for (const auto& [rank, d] : by_rank) {
    std::string line = fmt::format("rank {} ({}) is {}", rank, d->host, where(*d));
    if (position(*d) < front) line += fmt::format(": rank {} is behind (others reached collective {})", rank, front);
    out.push_back(line);
  }
  if (!missing.empty()) {
    out.push_back(fmt::format("rank(s) {} left no flight record: stopped, killed, or stuck where lockstep cannot "
                              "answer (the others wait for {} at collective {})",
                              list(missing), missing.size() == 1 ? "it" : "them", front));
  } else {
    std::vector<int> behind;
    for (const auto& [rank, d] : by_rank)
      if (position(*d) < front) behind.push_back(rank);
    if (behind.empty()) out.push_back(fmt::format("every rank is at collective {}: no rank is behind", front));
  }
  double longest = 0;
  for (const FlightDump& d : dumps)
    if (d.running) longest = std::max(longest, waited(d));
  if (longest < 1.0 && missing.empty())
    out.push_back("no collective has waited 1 s: the job is moving (a snapshot; ranks a few collectives apart is normal)");
  return out;
}

}  // namespace lockstep
