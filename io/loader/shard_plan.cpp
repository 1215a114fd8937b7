// shard_plan: see shard_plan.hpp.
#include "io/loader/shard_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "core/base/error.hpp"
#include "io/loader/sample_order.hpp"

namespace lockstep::io {

std::vector<SampleRange> plan_rank_ranges(const std::vector<int64_t>& shard_counts, int rank,
                                          int world) {
  LOCKSTEP_REQUIRE(world >= 1 && rank >= 0 && rank < world, "bad rank/world for the shard plan");
  const int shards = static_cast<int>(shard_counts.size());
  std::vector<SampleRange> out;
  if (shards >= world) {
    for (int s = rank; s < shards; s += world) out.push_back({s, 0, shard_counts[s]});
    return out;
  }
  int64_t total = 0;
  for (const int64_t c : shard_counts) total += c;
  const int64_t lo = total * rank / world, hi = total * (rank + 1) / world;
  int64_t offset = 0;  // global index of the current shard's first sample
  for (int s = 0; s < shards; ++s) {
    const int64_t b = std::max(lo, offset), e = std::min(hi, offset + shard_counts[s]);
    if (b < e) out.push_back({s, b - offset, e - offset});
    offset += shard_counts[s];
  }
  return out;
}

int64_t rank_sample_count(const std::vector<int64_t>& shard_counts, int rank, int world) {
  int64_t n = 0;
  for (const auto& r : plan_rank_ranges(shard_counts, rank, world)) n += r.size();
  return n;
}

std::vector<SampleRange> deal_rank_ranges(const std::vector<int64_t>& shard_counts, int64_t unit, uint64_t seed,
                                          int64_t epoch, int rank, int world) {
  LOCKSTEP_REQUIRE(world >= 1 && rank >= 0 && rank < world, "bad rank/world for the shard plan");
  LOCKSTEP_REQUIRE(unit >= 1, "the deal unit must be at least 1 sample");
  std::vector<SampleRange> units;
  for (int s = 0; s < static_cast<int>(shard_counts.size()); ++s)
    for (int64_t b = 0; b < shard_counts[static_cast<size_t>(s)]; b += unit)
      units.push_back({s, b, std::min(shard_counts[static_cast<size_t>(s)], b + unit)});
  int64_t total = 0;
  for (const int64_t c : shard_counts) total += c;
  const int64_t lo = total * rank / world, hi = total * (rank + 1) / world;
  // The rank argument of the permutation is fixed: every rank must draw the same deal.
  const auto perm = epoch_permutation(static_cast<int64_t>(units.size()), mix_seed(seed, 0xDEA1ULL), epoch, 0);
  std::vector<SampleRange> out;
  int64_t at = 0;  // position of the current unit's first sample in the dealt sequence
  for (const int64_t u : perm) {
    if (at >= hi) break;
    const SampleRange& r = units[static_cast<size_t>(u)];
    const int64_t b = std::max(lo, at), e = std::min(hi, at + r.size());
    if (b < e) out.push_back({r.shard, r.begin + (b - at), r.begin + (e - at)});
    at += r.size();
  }
  return out;
}

int64_t dealt_sample_count(const std::vector<int64_t>& shard_counts, int rank, int world) {
  int64_t total = 0;
  for (const int64_t c : shard_counts) total += c;
  return total * (rank + 1) / world - total * rank / world;
}

int64_t steps_per_epoch(const std::vector<int64_t>& shard_counts, int world, int64_t batch, bool wrap, bool dealt) {
  LOCKSTEP_REQUIRE(batch >= 1, "batch size must be at least 1");
  int64_t steps = -1;
  for (int r = 0; r < world; ++r) {
    const int64_t n = dealt ? dealt_sample_count(shard_counts, r, world) : rank_sample_count(shard_counts, r, world);
    if (wrap) {
      LOCKSTEP_REQUIRE(n > 0, "rank " + std::to_string(r) + " of " + std::to_string(world) +
                                  " gets no samples (more ranks than samples)");
      steps = std::max(steps, (n + batch - 1) / batch);
      continue;
    }
    LOCKSTEP_REQUIRE(n >= batch, "rank " + std::to_string(r) + " of " + std::to_string(world) +
                                     " gets " + std::to_string(n) + " samples, fewer than one batch of " +
                                     std::to_string(batch) + " (more ranks than data? use fewer ranks, "
                                     "a smaller batch or more shards)");
    const int64_t s = n / batch;
    steps = steps < 0 ? s : std::min(steps, s);
  }
  return steps;
}

std::string fixed_share_note(const std::vector<int64_t>& shard_counts, int world, int64_t batch, bool wrap) {
  int64_t low = -1, high = 0, total = 0;
  for (int r = 0; r < world; ++r) {
    const int64_t n = rank_sample_count(shard_counts, r, world);
    low = low < 0 ? n : std::min(low, n);
    high = std::max(high, n);
    total += n;
  }
  if (world < 2 || high - low < batch || low <= 0) return "";
  const std::string shares = "the ranks' shares are " + std::to_string(low) + " to " + std::to_string(high) + " samples";
  if (wrap) {
    char times[32];
    std::snprintf(times, sizeof times, "%.1f", static_cast<double>(high) / static_cast<double>(low));
    return shares + ", so with --data.remainder wrap each epoch repeats the smallest share up to " + times + " times";
  }
  const int64_t trained = (low / batch) * batch * world;
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.0f", 100.0 * static_cast<double>(total - trained) / static_cast<double>(total));
  return "each epoch trains " + std::to_string(trained) + " of the split's " + std::to_string(total) + " samples (" +
         pct + "% left out: " + shares + ", and every rank trains the smallest share's step count)";
}

}  // namespace lockstep::io
