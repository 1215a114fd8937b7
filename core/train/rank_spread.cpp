// rank_spread: see rank_spread.hpp.
#include "core/train/rank_spread.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/base/log.hpp"

namespace lockstep {

const char* rank_phase_name(int phase) {
  return io::kRankPhaseNames[static_cast<size_t>(phase)];
}

PhaseSpread RankSpread::phase(int p) const {
  PhaseSpread s;
  if (ms.empty()) return s;
  std::vector<double> v;
  for (int r = 0; r < world(); ++r) {
    const double x = ms[static_cast<size_t>(r)][static_cast<size_t>(p)];
    v.push_back(x);
    if (x < ms[static_cast<size_t>(s.min_rank)][static_cast<size_t>(p)]) s.min_rank = r;
    if (x > ms[static_cast<size_t>(s.max_rank)][static_cast<size_t>(p)]) s.max_rank = r;
  }
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  const size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return s;
}

RankSpread gather_rank_times(const Times& mine, int64_t steps, int rank, int world, const AllreduceSum& sum) {
  std::vector<double> all(static_cast<size_t>(kRankPhases * world), 0.0);
  const double per = steps > 0 ? 1000.0 / static_cast<double>(steps) : 0.0;
  double* slot = all.data() + static_cast<ptrdiff_t>(kRankPhases * rank);
  slot[kRankData] = mine.data_wait * per;
  slot[kRankForward] = mine.forward * per;
  slot[kRankBackward] = mine.backward * per;
  slot[kRankComm] = mine.exposed_comm * per;
  slot[kRankOptimizer] = mine.optimizer * per;
  slot[kRankBusy] = std::max(0.0, mine.seconds - mine.exposed_comm) * per;
  sum(all.data(), static_cast<int>(all.size()));
  RankSpread s;
  s.ms.resize(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r)
    for (int p = 0; p < kRankPhases; ++p)
      s.ms[static_cast<size_t>(r)][static_cast<size_t>(p)] = all[static_cast<size_t>(kRankPhases * r + p)];
  return s;
}

std::optional<std::string> StragglerWatch::update(const RankSpread& s, const std::vector<std::string>& hosts) {
  if (windows_ <= 0 || s.world() < 2) return std::nullopt;
  const PhaseSpread busy = s.phase(kRankBusy);
  const bool slow = busy.median > 0 && busy.max > busy.median * (1.0 + percent_ / 100.0);
  if (!slow) {
    rank_ = -1, streak_ = 0, warned_ = false;
    return std::nullopt;
  }
  if (busy.max_rank != rank_) rank_ = busy.max_rank, streak_ = 0, warned_ = false;
  if (++streak_ < windows_ || warned_) return std::nullopt;
  warned_ = true;
  const auto& me = s.ms[static_cast<size_t>(rank_)];
  const std::string host = static_cast<size_t>(rank_) < hosts.size() ? hosts[static_cast<size_t>(rank_)] : "?";
  return fmt::format(
      "straggler: rank {} ({}) has been the slowest rank for {} log windows: busy {:.1f} ms/step vs a median of "
      "{:.1f} (+{:.0f}%); its data wait {:.1f}, forward {:.1f}, backward {:.1f}, optimizer {:.1f} ms/step; the "
      "other ranks wait for it (exposed comm up to {:.1f} ms/step)",
      rank_, host, streak_, busy.max, busy.median, 100.0 * (busy.max / busy.median - 1.0), me[kRankData],
      me[kRankForward], me[kRankBackward], me[kRankOptimizer], s.phase(kRankComm).max);
}

RankMonitor::RankMonitor(int rank, int world, std::vector<std::string> hosts, AllreduceSum sum, int windows,
                         double percent, GpuWatch gpu)
    : rank_(rank), world_(world), hosts_(std::move(hosts)), sum_(std::move(sum)), watch_(windows, percent), gpu_(gpu) {
  if (!gpu_.device.is_cuda()) return;
  gauges_ = std::make_unique<GpuGauges>(gpu_.device);
  if (!gauges_->available()) log::info0("GPU gauges (utilisation, memory, power): n/a on rank 0: " + gauges_->why_not());
}

RankMonitor::~RankMonitor() = default;

namespace {

// "41.2" or, over ranks, "41.2-41.5"; "n/a" where no rank measured.
std::string range_text(const std::vector<double>& v, const char* format) {
  double lo = INFINITY, hi = -INFINITY;
  for (double x : v)
    if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
  if (!std::isfinite(lo)) return "n/a";
  const std::string a = fmt::format(fmt::runtime(format), lo), b = fmt::format(fmt::runtime(format), hi);
  return a == b ? a : a + "-" + b;
}

}  // namespace

std::string RankMonitor::observe_gpus(const Times& mine, int64_t steps, io::MetricsRow* row) {
  if (!gauges_) return "";  // a CPU run: every rank alike
  std::string mfu;
  if ((row->mfu_pct = mfu_pct(gpu_, steps, mine.seconds))) mfu = fmt::format(", MFU {:.1f}%", *row->mfu_pct);
  const GpuReading here = gauges_->read();
  const double nan = std::nan("");
  std::vector<double> v(static_cast<size_t>(3 * world_), 0.0);  // (util, mem, power) per rank
  const size_t at = static_cast<size_t>(3 * rank_);
  v[at] = here.util_pct.value_or(nan);
  v[at + 1] = here.mem_gib.value_or(nan);
  v[at + 2] = here.power_w.value_or(nan);
  if (world_ > 1) sum_(v.data(), 3 * world_);  // each slot written by one rank (NaN + 0 stays NaN)
  if (std::none_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); }))
    return mfu.empty() ? "" : ";" + mfu.substr(1);
  for (int r = 0; r < world_; ++r) {
    row->gpu_util_pct.push_back(v[static_cast<size_t>(3 * r)]);
    row->gpu_mem_gib.push_back(v[static_cast<size_t>(3 * r + 1)]);
    row->gpu_power_w.push_back(v[static_cast<size_t>(3 * r + 2)]);
  }
  return fmt::format("; GPU{} busy {}%, {} GiB, {} W{}", world_ > 1 ? "s" : "", range_text(row->gpu_util_pct, "{:.0f}"),
                     range_text(row->gpu_mem_gib, "{:.1f}"), range_text(row->gpu_power_w, "{:.0f}"), mfu);
}

std::string RankMonitor::observe(const Times& mine, int64_t steps, io::MetricsRow* row) {
  const std::string gpus = observe_gpus(mine, steps, row);
  if (world_ < 2) return gpus;
  const RankSpread s = gather_rank_times(mine, steps, rank_, world_, sum_);
  for (int p = 0; p < kRankPhases; ++p) {
    const PhaseSpread ps = s.phase(p);
    row->rank_ms[static_cast<size_t>(p)] = {ps.min, ps.median, ps.max};
  }
  const int slow = s.slowest();
  const std::string host = static_cast<size_t>(slow) < hosts_.size() ? hosts_[static_cast<size_t>(slow)] : "?";
  row->slowest_rank = slow;
  row->slowest_host = host;
  if (auto warning = watch_.update(s, hosts_)) log::warn0(*warning);
  const PhaseSpread busy = s.phase(kRankBusy), comm = s.phase(kRankComm);
  return fmt::format("; ranks: busy min/median/max {:.1f}/{:.1f}/{:.1f} ms/step, exposed comm {:.1f}/{:.1f}/{:.1f}, "
                     "slowest rank {}@{}",
                     busy.min, busy.median, busy.max, comm.min, comm.median, comm.max, slow, host) +
         gpus;
}

}  // namespace lockstep
