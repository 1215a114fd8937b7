// sweep_data: see sweep_data.hpp.
#include "io/records/sweep_data.hpp"

#include <algorithm>
#include <fstream>
#include <map>

#include "core/base/error.hpp"
#include "io/records/metrics_row.hpp"
#include "io/records/run_outcome.hpp"
#include "io/util/file_util.hpp"
#include "io/util/json_io.hpp"

namespace lockstep::io {
namespace {

SweepRun read_run(const std::string& dir, int ranks, std::vector<std::string>* notes) {
  SweepRun run;
  run.ranks = ranks;
  const std::string path = dir + "/metrics.jsonl";
  LOCKSTEP_REQUIRE(path_exists(path), path + ": missing (did the run start?)");
  std::vector<double> sps;
  double seconds = 0, exposed = 0;
  std::vector<std::string> foreign;
  const std::vector<MetricsRow> rows = read_metrics_rows(path, &foreign);
  for (const auto& line : foreign) notes->push_back(path + ": " + line + " is no row lockstep writes: left out");
  const MetricsRow* end = standing_end(rows);
  LOCKSTEP_REQUIRE(end && end->global_batch.value_or(0) > 0,
                   path + ": the run did not finish (no end row after its last step)");
  const int64_t world = end->world_size.value_or(0);
  run.global_batch = *end->global_batch;
  run.params = end->params.value_or(0);
  run.wire_bytes = static_cast<double>(end->grad_wire_bytes.value_or(0));
  run.buckets = static_cast<int>(end->grad_buckets.value_or(1));
  bool first = true;
  int64_t job_world = 0;
  for (const MetricsRow& row : rows) {
    if (row.kind == RowKind::kStart) {
      // A job: its own first window is warm-up; its rows count only at the directory's world
      // (a job of another world size in it made the median another world's throughput).
      job_world = row.world_size.value_or(0);
      first = true;
      continue;
    }
    if (row.kind != RowKind::kTrain || (job_world != 0 && job_world != ranks)) continue;
    if (first) {  // the first window holds warm-up (allocation, first-touch, caches)
      first = false;
      continue;
    }
    LOCKSTEP_REQUIRE(row.samples_per_s && row.seconds, path + ": a train row without samples_per_s or seconds");
    sps.push_back(*row.samples_per_s);
    seconds += *row.seconds;
    exposed += row.exposed_comm_s.value_or(0.0);
  }
  // The directory's name is what the sweep meant; the end row is what ran (a 1-rank run in
  // ranks-4/ was charted as 4 ranks at 25% efficiency).
  LOCKSTEP_REQUIRE(world == 0 || world == ranks,
                   path + ": the run trained at " + std::to_string(world) + " rank(s) (its end row's world_size), " +
                       "not the " + std::to_string(ranks) + " its directory's name says");
  LOCKSTEP_REQUIRE(!sps.empty(), path + ": fewer than 2 train rows of a job at " + std::to_string(ranks) +
                                     " rank(s) (lower --train.log-every or run more steps)");
  std::sort(sps.begin(), sps.end());
  run.samples_per_s = sps[sps.size() / 2];
  run.step_seconds = static_cast<double>(run.global_batch) / run.samples_per_s;
  run.exposed_share = seconds > 0 ? exposed / seconds : 0.0;
  const std::string doctor = dir + "/doctor.json";
  if (path_exists(doctor)) {
    const Json t = parse_json(read_text_file(doctor), doctor);
    run.hosts = json_get_or<int>(t, "hosts", 0, doctor);
    run.small_bytes = json_get_or<double>(t, "small_bytes", 0, doctor);
    run.small_seconds = json_get_or<double>(t, "small_seconds", 0, doctor);
    run.big_bytes = json_get_or<double>(t, "big_bytes", 0, doctor);
    run.big_seconds = json_get_or<double>(t, "big_seconds", 0, doctor);
  }
  return run;
}

}  // namespace

Sweep read_sweep(const std::string& dir) {
  LOCKSTEP_REQUIRE(is_directory(dir), dir + ": not a directory");
  Sweep s;
  const std::string info = dir + "/sweep.txt";
  if (path_exists(info)) {
    require_regular_file(info);
    std::ifstream in(info);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("mode=", 0) == 0) s.mode = line.substr(5);
  }
  std::map<int, std::string> names;  // rank count -> its directory
  for (const std::string& name : list_dir(dir)) {
    if (name.rfind("ranks-", 0) != 0 || !is_directory(dir + "/" + name)) continue;
    const std::string digits = name.substr(6);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    LOCKSTEP_REQUIRE(digits.size() <= 7, dir + "/" + name + ": " + digits + " is not a rank count (at most 9999999)");
    const int ranks = std::stoi(digits);
    const auto [seen, fresh] = names.emplace(ranks, name);
    LOCKSTEP_REQUIRE(fresh, dir + ": two run directories of " + std::to_string(ranks) + " rank(s), " + seen->second +
                                " and " + name + ": keep one");
    s.runs.push_back(read_run(dir + "/" + name, ranks, &s.notes));
  }
  LOCKSTEP_REQUIRE(!s.runs.empty(), dir + ": no ranks-N run directories (made by slurm/scaling_sweep.sh)");
  std::sort(s.runs.begin(), s.runs.end(), [](const SweepRun& a, const SweepRun& b) { return a.ranks < b.ranks; });
  return s;
}

}  // namespace lockstep::io
