// op_profile: see op_profile.hpp.
#include "core/train/op_profile.hpp"

#include <fmt/format.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "core/base/env.hpp"
#include "core/base/log.hpp"
#include "io/util/file_util.hpp"
#include "io/util/temp_files.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace lockstep {
namespace {

namespace prof = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;

// Kineto's activity kinds (libkineto::ActivityType, kineto/ActivityType.h), as KinetoEvent
// reports them.
OpEvent::Kind kind_of(uint8_t activity) {
  switch (activity) {
    case 0: return OpEvent::Kind::kOperator;  // CPU_OP
    case 3: case 4: return OpEvent::Kind::kCopy;  // GPU_MEMCPY, GPU_MEMSET
    case 5: return OpEvent::Kind::kKernel;   // CONCURRENT_KERNEL
    case 7: case 8: return OpEvent::Kind::kRuntime;  // CUDA_RUNTIME, CUDA_DRIVER
    default: return OpEvent::Kind::kOther;
  }
}

// CUDA calls that make the host wait for the device (or, for allocations, usually do).
bool synchronising(const std::string& name) {
  static const std::set<std::string> calls = {"cudaMemcpy", "cudaMemcpy2D", "cudaMemset", "cudaMalloc", "cudaFree",
                                              "cudaHostAlloc", "cudaMallocHost", "cudaFreeHost", "cudaHostRegister"};
  return name.find("Synchronize") != std::string::npos || calls.count(name) > 0;
}

struct Total {
  int64_t count = 0;
  uint64_t ns = 0;
};

std::string top(const std::map<std::string, Total>& totals, size_t n, int64_t steps, uint64_t window_ns) {
  std::vector<std::pair<std::string, Total>> v(totals.begin(), totals.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  std::string out;
  for (size_t i = 0; i < v.size() && i < n; ++i) {
    const Total& t = v[i].second;
    std::string name = v[i].first.size() > 110 ? v[i].first.substr(0, 107) + "..." : v[i].first;
    out += fmt::format("  {:9.3f} ms/step {:5.1f}%  {:7.1f}/step  {}\n", t.ns / 1e6 / steps,
                       window_ns ? 100.0 * t.ns / window_ns : 0.0, static_cast<double>(t.count) / steps, name);
  }
  return out;
}

}  // namespace

std::string summarize_ops(const std::vector<OpEvent>& events, int64_t steps, uint64_t window_begin_ns,
                          uint64_t window_end_ns) {
  steps = std::max<int64_t>(steps, 1);
  const uint64_t window = window_end_ns > window_begin_ns ? window_end_ns - window_begin_ns : 0;
  std::map<std::string, Total> ops, kernels, syncs;
  std::vector<std::pair<uint64_t, uint64_t>> busy;
  int64_t launches = 0, n_kernels = 0, n_ops = 0;
  for (const OpEvent& e : events) {
    const uint64_t dur = e.end_ns > e.start_ns ? e.end_ns - e.start_ns : 0;
    switch (e.kind) {
      case OpEvent::Kind::kOperator:
        ++n_ops;
        ops[e.name].count++, ops[e.name].ns += dur;
        break;
      case OpEvent::Kind::kKernel:
        ++n_kernels;
        [[fallthrough]];
      case OpEvent::Kind::kCopy:
        kernels[e.name].count++, kernels[e.name].ns += dur;
        busy.emplace_back(std::max(e.start_ns, window_begin_ns), std::min(e.end_ns, window_end_ns));
        break;
      case OpEvent::Kind::kRuntime:
        if (e.name.find("LaunchKernel") != std::string::npos) ++launches;
        if (synchronising(e.name)) syncs[e.name].count++, syncs[e.name].ns += dur;
        break;
      case OpEvent::Kind::kOther: break;
    }
  }
  // The device's busy time: the union of its kernels' and copies' intervals.
  std::sort(busy.begin(), busy.end());
  uint64_t busy_ns = 0, reach = 0;
  for (const auto& [b, e] : busy) {
    if (e <= b) continue;
    const uint64_t from = std::max(b, reach);
    if (e > from) busy_ns += e - from;
    reach = std::max(reach, e);
  }
  std::string out = fmt::format("{} step(s) in {:.3f} ms of wall clock ({:.3f} ms/step)", steps, window / 1e6,
                                window / 1e6 / steps);
  if (n_kernels > 0 || !busy.empty())
    out += fmt::format(": device busy {:.1f}% ({:.3f} ms/step), {:.0f} kernels and {:.0f} launches per step",
                       window ? 100.0 * busy_ns / window : 0.0, busy_ns / 1e6 / steps,
                       static_cast<double>(n_kernels) / steps, static_cast<double>(launches) / steps);
  out += fmt::format(", {:.0f} operators per step\n", static_cast<double>(n_ops) / steps);
  if (syncs.empty()) {
    out += n_kernels > 0 ? "host syncs: none (no synchronising CUDA call in the window)\n" : "";
  } else {
    out += "host syncs (synchronising CUDA calls in the window; the first traced step may hold warm-up work):\n";
    out += top(syncs, syncs.size(), steps, window);
  }
  if (!kernels.empty()) out += "device: kernels and copies by total time\n" + top(kernels, 25, steps, window);
  out += "host: operators by total time (inclusive: nested operators count in their callers too)\n" +
         top(ops, 30, steps, window);
  return out;
}

OpProfile::OpProfile(bool cuda, int rank, std::string dir) : cuda_(cuda), rank_(rank), dir_(std::move(dir)) {}

OpProfile::~OpProfile() {
  if (!running_) return;
  try {
    prof::disableProfiler();
  } catch (...) {  // a destructor: the run is already ending
  }
}

void OpProfile::start() {
  if (running_) return;
  try {
    // A CPU-only node: Kineto looks for GPUs when it starts and logs the failure as an ERROR
    // line that means nothing here (the user's own setting stands).
    if (!cuda_) ::setenv(env::kKinetoLogLevel, "5", /*overwrite=*/0);
    const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
    std::set<ActivityType> activities{ActivityType::CPU};
    if (cuda_) activities.insert(ActivityType::CUDA);
    prof::prepareProfiler(config, activities);
    prof::enableProfiler(config, activities);
    running_ = true;
  } catch (const std::exception& e) {
    log::warn(std::string("--trace.ops: LibTorch's profiler did not start, no operator trace: ") + e.what());
  }
}

std::string OpProfile::stop(int64_t first, int64_t last) {
  if (!running_) return "";
  running_ = false;
  try {
#ifdef LOCKSTEP_HAVE_CUDA
    if (cuda_) c10::cuda::device_synchronize();  // the traced steps' kernels are in the trace
#endif
    std::unique_ptr<prof::ProfilerResult> result = prof::disableProfiler();
    std::vector<OpEvent> events;
    uint64_t end = result->trace_start_ns();
    for (const prof::KinetoEvent& k : result->events()) {
      OpEvent e;
      e.name = k.name();
      e.kind = kind_of(k.activityType());
      e.start_ns = k.startNs();
      e.end_ns = k.endNs();
      end = std::max(end, e.end_ns);
      events.push_back(std::move(e));
    }
    const std::string summary = summarize_ops(events, last - first + 1, result->trace_start_ns(), end);
    io::make_dirs(dir_);
    const std::string json = dir_ + "/ops-rank-" + std::to_string(rank_) + ".json";
    const std::string tmp = io::temp_name_for(json);
    result->save(tmp);
    io::commit_temp(tmp, json);
    io::write_file_atomic(dir_ + "/ops-rank-" + std::to_string(rank_) + ".txt",
                          fmt::format("operator profile of steps {}-{}, rank {}\n", first, last, rank_) + summary);
    return summary.substr(0, summary.find('\n'));
  } catch (const std::exception& e) {
    log::warn(std::string("--trace.ops: operator trace not written: ") + e.what());
    return "";
  }
}

}  // namespace lockstep
