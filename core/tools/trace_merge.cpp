// trace_merge: see trace_merge.hpp.
#include "core/tools/trace_merge.hpp"

#include <fmt/format.h>

#include <map>
#include <set>
#include <vector>

#include "core/base/error.hpp"
#include "core/train/step_trace.hpp"
#include "io/util/file_util.hpp"
#include "io/util/json_io.hpp"

namespace lockstep {
namespace {

// Appends the X events of PATH (a Kineto trace of rank RANK, on that host's wall clock) to
// OUT as threads of process RANK, moved to the job clock's microseconds (its step trace's:
// WALL_MINUS_JOB seconds earlier). Returns how many.
int64_t merge_ops(const std::string& path, int rank, double wall_minus_job, io::Json& out) {
  const io::Json t = io::parse_json(io::read_text_file(path), path);
  LOCKSTEP_REQUIRE(t.contains("traceEvents") && t["traceEvents"].is_array(), path + ": not a Chrome trace (no traceEvents)");
  const double base_us = io::json_get_or<double>(t, "baseTimeNanoseconds", 0.0, path) / 1000.0 - wall_minus_job * 1e6;
  std::map<std::pair<std::string, std::string>, int> threads;  // (pid, tid) as text -> our tid
  int64_t n = 0;
  for (const auto& e : t["traceEvents"]) {
    if (e.value("ph", "") != "X" || !e.contains("ts")) continue;
    const std::string cat = e.value("cat", "");
    const bool device = cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "gpu_user_annotation";
    const auto key = std::make_pair(e.contains("pid") ? e["pid"].dump() : "", e.contains("tid") ? e["tid"].dump() : "");
    auto it = threads.find(key);
    if (it == threads.end()) {
      it = threads.emplace(key, 10 + static_cast<int>(threads.size())).first;
      const std::string name = device ? "ops: GPU " + key.first + ", stream " + key.second : "ops: host thread " + key.second;
      out.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", it->second}, {"args", {{"name", name}}}});
    }
    io::Json m = e;
    m["pid"] = rank;
    m["tid"] = it->second;
    m["ts"] = io::json_get_or<double>(e, "ts", 0.0, path) + base_us;
    out.push_back(std::move(m));
    ++n;
  }
  return n;
}

// Whether two files' headers are of one job: its world, traced steps and first step. A file
// of an older lockstep has no header (world 0): it says nothing of its job.
bool same_job(const TraceHeader& a, const TraceHeader& b) {
  return a.world == b.world && a.first_step == b.first_step && a.last_step == b.last_step &&
         a.job_first_step == b.job_first_step;
}

std::string job_text(const TraceHeader& h) {
  if (h.world == 0) return "a job of an older lockstep, which did not say which";
  return fmt::format("the job of {} rank(s) that traced steps {}-{} from step {} on", h.world, h.first_step,
                     h.last_step, h.job_first_step);
}

struct TraceFile {
  std::string name, path;
  TraceHeader header;  // an older file's: its name's rank, world 0, ops (any file there is taken)
  io::Json json;
};

// DIR's rank-R.json files (R in digits, no leading zero). Files that are not one rank's trace
// (a copy, "rank-0.bak.json" or "rank-00.json", was merged a second time: that rank's times
// doubled; a broken file of another job failed the whole merge) go to SKIPPED with why.
std::vector<TraceFile> read_trace_files(const std::string& dir, std::vector<std::string>* skipped) {
  std::vector<TraceFile> files;
  for (const std::string& f : io::list_dir(dir)) {
    if (f.compare(0, 5, "rank-") != 0 || f.size() < 11 || f.compare(f.size() - 5, 5, ".json") != 0) continue;
    const std::string digits = f.substr(5, f.size() - 10);
    if (digits.size() > 7 || digits.find_first_not_of("0123456789") != std::string::npos ||
        (digits.size() > 1 && digits[0] == '0')) {
      skipped->push_back(f + " (not a rank's trace file name: a copy?)");
      continue;
    }
    TraceFile t;
    t.name = f;
    t.path = dir + "/" + f;
    t.header.rank = std::stoi(digits);
    t.header.ops = true;
    try {
      t.json = io::parse_json(io::read_text_file(t.path), t.path);
      LOCKSTEP_REQUIRE(t.json.contains("traceEvents") && t.json["traceEvents"].is_array(), "no traceEvents");
      if (t.json.contains("lockstep")) {
        const TraceHeader h = parse_trace_header(t.json["lockstep"].dump(), t.path + ": lockstep");
        LOCKSTEP_REQUIRE(h.rank == t.header.rank, "it holds rank " + std::to_string(h.rank) + "'s trace");
        t.header = h;
      }
    } catch (const Error& e) {
      skipped->push_back(f + " (unreadable: " + e.what() + ")");
      continue;
    }
    files.push_back(std::move(t));
  }
  return files;
}

// The job of the newest file that says which (else the older lockstep's files). Its time is
// the job clock (rank 0's, clock.hpp): one job's ranks on hosts whose clocks differ no longer
// pass for two jobs, the newer one dropped (a hostile finding). By time, not by step: a resume
// from an earlier checkpoint (--resume PATH) is newer than the job it went back from.
TraceHeader newest_job(const std::vector<TraceFile>& files) {
  const TraceFile* newest = nullptr;
  for (const TraceFile& f : files)
    if (f.header.world > 0 && (!newest || f.header.unix_time > newest->header.unix_time)) newest = &f;
  return newest ? newest->header : TraceHeader{};
}

}  // namespace

TraceSummary merge_traces(const std::string& run_dir) {
  const std::string dir = run_dir + "/trace";
  LOCKSTEP_REQUIRE(io::is_directory(run_dir), run_dir + ": no such run directory");
  LOCKSTEP_REQUIRE(io::is_directory(dir), dir + ": no traces (train with --trace.steps A-B first)");
  io::Json merged = {{"displayTimeUnit", "ms"}, {"traceEvents", io::Json::array()}};
  const std::vector<std::string> phases{"data", "forward", "backward", "exposed comm", "optimizer"};
  struct Rank {
    std::map<std::string, double> ms;
    std::set<int64_t> steps;
    double collective_ms = 0;
    int collectives = 0;
  };
  std::map<int, Rank> ranks;
  TraceSummary s;
  std::vector<TraceFile> files = read_trace_files(dir, &s.skipped);
  LOCKSTEP_REQUIRE(!files.empty(), dir + ": no readable rank-R.json traces" +
                                       (s.skipped.empty() ? std::string() : " (" + s.skipped.front() + ")"));
  const TraceHeader job = newest_job(files);
  for (const TraceFile& f : files) {
    if (!same_job(f.header, job)) {
      s.skipped.push_back(f.name + " (" + job_text(f.header) + ")");
      continue;
    }
    for (const auto& e : f.json["traceEvents"]) {
      merged["traceEvents"].push_back(e);
      if (e.value("ph", "") != "X") continue;
      Rank& r = ranks[io::json_get_or<int>(e, "pid", -1, f.path)];
      const double dur = io::json_get_or<double>(e, "dur", 0.0, f.path) / 1000.0;
      if (e.value("cat", "") == "step") {
        r.ms[e.value("name", "")] += dur;
        if (e.contains("args") && e["args"].contains("step"))
          r.steps.insert(io::json_as<int64_t>(e["args"]["step"], f.path + ": args.step"));
      } else if (e.value("cat", "") == "collective") {
        r.collective_ms += dur;
        ++r.collectives;
      }
    }
    // An operator profile of this job's (an older trace says nothing: any there is taken).
    const std::string ops = dir + "/ops-rank-" + std::to_string(f.header.rank) + ".json";
    // One rank's unreadable profile costs its operator spans, not the timeline (as a rank's
    // unreadable trace file costs that rank).
    if (f.header.ops && io::path_exists(ops)) {
      try {
        io::Json spans = io::Json::array();  // all of the file's, or none
        s.op_spans += merge_ops(ops, f.header.rank, f.header.wall_minus_job, spans);
        for (auto& e : spans) merged["traceEvents"].push_back(std::move(e));
      } catch (const std::exception& e) {  // lockstep's errors, and the JSON library's type errors
        s.skipped.push_back("ops-rank-" + std::to_string(f.header.rank) + ".json (" + e.what() + ")");
      }
    }
  }
  LOCKSTEP_REQUIRE(!ranks.empty(), dir + ": no events in the rank-R.json traces of " + job_text(job));
  if (job.world > 0 && static_cast<int>(ranks.size()) < job.world)
    s.note = fmt::format("only {} of the job's {} ranks left a trace (a rank that failed before its range ended?)",
                         ranks.size(), job.world);
  s.job = job_text(job);
  s.ranks = static_cast<int>(ranks.size());
  s.merged_path = dir + "/merged.json";
  io::write_file_atomic(s.merged_path, io::dump_json(merged) + "\n");
  int slowest = ranks.begin()->first;
  double worst = -1;
  for (const auto& [rank, r] : ranks) {
    double busy = 0;
    for (const auto& p : phases)
      if (p != "exposed comm") busy += r.ms.count(p) ? r.ms.at(p) : 0.0;
    busy /= std::max<size_t>(1, r.steps.size());
    if (busy > worst) worst = busy, slowest = rank;
  }
  std::string t = "| rank | steps | data | forward | backward | exposed comm | optimizer | collectives (n, ms) |\n"
                  "|---|---|---|---|---|---|---|---|\n";
  for (const auto& [rank, r] : ranks) {
    const double n = static_cast<double>(std::max<size_t>(1, r.steps.size()));
    t += fmt::format("| {}{} | {} |", rank, rank == slowest && ranks.size() > 1 ? " (slowest)" : "", r.steps.size());
    for (const auto& p : phases) t += fmt::format(" {:.2f} |", (r.ms.count(p) ? r.ms.at(p) : 0.0) / n);
    t += fmt::format(" {}, {:.2f} |\n", r.collectives, r.collective_ms / n);
  }
  s.table = "ms per traced step:\n\n" + t;
  return s;
}

}  // namespace lockstep
