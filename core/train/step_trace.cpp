// step_trace: see step_trace.hpp.
#include "core/train/step_trace.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "core/train/step_timer.hpp"
#include "io/util/file_util.hpp"
#include "io/util/json_io.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

namespace lockstep {
namespace {

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kData: return "data";
    case Phase::kForward: return "forward";
    case Phase::kBackward: return "backward";
    case Phase::kComm: return "exposed comm";
    case Phase::kOptimizer: return "optimizer";
  }
  return "?";
}

std::string event(const std::string& name, const char* cat, int pid, int tid, double ts, double dur,
                  const io::Json& args = io::Json::object()) {
  io::Json e = {{"name", name}, {"cat", cat}, {"ph", "X"}, {"pid", pid}, {"tid", tid}, {"ts", ts}, {"dur", dur}};
  if (!args.empty()) e["args"] = args;
  return io::dump_json(e);
}

}  // namespace

TraceRange parse_trace_range(const std::string& text) {
  TraceRange r;
  if (text.empty()) return r;
  const auto dash = text.find('-');
  const std::string a = text.substr(0, dash), b = dash == std::string::npos ? a : text.substr(dash + 1);
  auto num = [&](const std::string& s) {
    if (s.empty() || s.size() > 12 || s.find_first_not_of("0123456789") != std::string::npos)
      throw UsageError("--trace.steps must be A-B or A (1-based global steps), not '" + text + "'");
    return std::stoll(s);
  };
  r.first = num(a);
  r.last = num(b);
  if (r.first < 1 || r.last < r.first)
    throw UsageError("--trace.steps " + text + ": steps count from 1 and A must not exceed B");
  if (r.last - r.first >= 10000) throw UsageError("--trace.steps " + text + ": at most 10000 steps per trace");
  return r;
}

std::string trace_range_note(const TraceRange& range, int64_t done, int64_t last) {
  if (range.empty()) return "";
  const std::string what = fmt::format("--trace.steps {}-{}", range.first, range.last);
  if (range.first > last)
    return fmt::format("{}: this run ends at step {}, so no trace will be written", what, last);
  if (range.last <= done)
    return fmt::format("{}: this run resumes after step {}, so no trace will be written", what, done);
  if (range.first <= done || range.last > last)
    return fmt::format("{}: only steps {}-{} run here; the trace holds those", what, std::max(range.first, done + 1),
                       std::min(range.last, last));
  return "";
}

StepTrace::StepTrace(TraceRange range, int rank, int world, std::string host, std::string dir,
                     const FlightRecorder* flight, int64_t done, bool ops, bool cuda)
    : range_(range), rank_(rank), world_(world), host_(std::move(host)), dir_(std::move(dir)), flight_(flight),
      step_(done), done_(done) {
  if (ops && on()) ops_ = std::make_unique<OpProfile>(cuda, rank_, dir_);
  profiled_ = ops_ != nullptr;
  const double steady = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
  offset_us_ = (job_seconds() - steady) * 1e6;  // the flight recorder's clock: collectives line up with steps
}

double StepTrace::us(Clock::time_point t) const {
  return std::chrono::duration<double, std::micro>(t.time_since_epoch()).count() + offset_us_;
}

void StepTrace::begin_step(Clock::time_point t) {
  ++step_;
  last_ = t;
  if (step_ > range_.last && on()) finish();
  if (!active()) return;
  if (steps_.empty()) {
    first_traced_ = step_;
    if (ops_) ops_->start();
  }
  steps_.emplace_back(us(t) / 1e6, us(t) / 1e6);
  if (ops_ && step_ - first_traced_ >= kMaxOpSteps) stop_ops(step_ - 1);  // the rest: phases only
#ifdef LOCKSTEP_HAVE_CUDA
  nvtxRangePushA(fmt::format("step {}", step_).c_str());
  nvtxRangePushA("data");
#endif
}

void StepTrace::mark(Phase phase, Clock::time_point t) {
  if (!active()) return;
  events_.push_back(event(phase_name(phase), "step", rank_, 0, us(last_), us(t) - us(last_), {{"step", step_}}));
  last_ = t;
  if (!steps_.empty()) steps_.back().second = us(t) / 1e6;
#ifdef LOCKSTEP_HAVE_CUDA
  nvtxRangePop();
  if (phase == Phase::kOptimizer) {
    nvtxRangePop();  // the step
  } else {
    nvtxRangePushA(phase_name(static_cast<Phase>(static_cast<int>(phase) + 1)));
  }
#endif
}

void StepTrace::span(const std::string& name, Clock::time_point begin, Clock::time_point end) {
  if (!active()) return;
  events_.push_back(event(name, "io", rank_, 2, us(begin), us(end) - us(begin), {{"step", step_}}));
}

void StepTrace::stop_ops(int64_t last) {
  if (!ops_) return;
  const std::string summary = ops_->stop(first_traced_, last);
  ops_.reset();
  if (!summary.empty())
    log::info0(fmt::format("operator profile of steps {}-{} written to {}/ops-rank-*.json and .txt: {}", first_traced_,
                           last, dir_, summary));
}

std::string trace_header_json(const TraceHeader& h) {
  return io::dump_json({{"rank", h.rank}, {"world", h.world}, {"first_step", h.first_step}, {"last_step", h.last_step},
                        {"job_first_step", h.job_first_step}, {"ops", h.ops}, {"unix_time", h.unix_time},
                        {"wall_minus_job", h.wall_minus_job}});
}

TraceHeader parse_trace_header(const std::string& json, const std::string& what) {
  const io::Json m = io::parse_json(json, what);
  TraceHeader h;
  h.rank = io::json_get<int>(m, "rank", what);
  h.world = io::json_get<int64_t>(m, "world", what);
  h.first_step = io::json_get<int64_t>(m, "first_step", what);
  h.last_step = io::json_get<int64_t>(m, "last_step", what);
  h.job_first_step = io::json_get<int64_t>(m, "job_first_step", what);
  h.ops = io::json_get<bool>(m, "ops", what);
  h.unix_time = io::json_get<double>(m, "unix_time", what);
  h.wall_minus_job = io::json_get_or<double>(m, "wall_minus_job", 0.0, what);  // 0: written before the job clock
  return h;
}

void StepTrace::finish() {
  if (!on() || written_ || steps_.empty()) return;
  written_ = true;
  const int64_t last = std::min(range_.last, step_);
  stop_ops(last);
  // The steps this process ran: after a resume inside the range, from first_traced_ on.
  const double job_now = job_seconds();
  const TraceHeader header{rank_, world_, first_traced_, last, done_ + 1, profiled_, job_now, unix_seconds() - job_now};
  std::string out = "{\"displayTimeUnit\":\"ms\",\"lockstep\":" + trace_header_json(header) + ",\"traceEvents\":[\n";
  out += io::dump_json({{"name", "process_name"}, {"ph", "M"}, {"pid", rank_},
                        {"args", {{"name", fmt::format("rank {} ({})", rank_, host_)}}}});
  for (const auto& [tid, name] : std::vector<std::pair<int, const char*>>{{0, "step phases"}, {1, "collectives"}, {2, "checkpoints"}})
    out += ",\n" + io::dump_json({{"name", "thread_name"}, {"ph", "M"}, {"pid", rank_}, {"tid", tid}, {"args", {{"name", name}}}});
  for (const auto& e : events_) out += ",\n" + e;
  // The collectives of the traced steps, not those between them (an epoch's end: its
  // evaluation's all-reduces, the checkpoint's broadcast), which the table counted per step.
  const auto in_a_step = [&](double t) {
    return std::any_of(steps_.begin(), steps_.end(), [t](const auto& s) { return t >= s.first && t <= s.second; });
  };
  if (flight_)
    for (const auto& c : flight_->entries())
      if (c.end > 0 && in_a_step(c.start))
        out += ",\n" + event(c.what, "collective", rank_, 1, c.start * 1e6, (c.end - c.start) * 1e6, {{"seq", c.seq}});
  out += "\n]}\n";
  try {
    io::make_dirs(dir_);
    io::write_file_atomic(dir_ + "/rank-" + std::to_string(rank_) + ".json", out);
    log::info0(fmt::format("trace of steps {}-{} written to {}/rank-*.json (lockstep report --trace RUN_DIR merges "
                           "them; chrome://tracing or ui.perfetto.dev opens them)",
                           first_traced_, last, dir_));
  } catch (const Error& e) {
    log::warn(std::string("trace not written: ") + e.what());
  }
}

}  // namespace lockstep
