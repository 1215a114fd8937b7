// epoch_order: see epoch_order.hpp.
#include "io/loader/epoch_order.hpp"

#include <algorithm>
#include <numeric>

#include "core/base/error.hpp"
#include "io/loader/sample_order.hpp"

namespace lockstep::io {

std::vector<Block> make_blocks(const std::vector<SampleRange>& ranges, int64_t block) {
  LOCKSTEP_REQUIRE(block >= 1, "block size must be at least 1 sample");
  std::vector<Block> out;
  int64_t local = 0;
  for (const auto& r : ranges)
    for (int64_t b = r.begin; b < r.end; b += block) {
      const int64_t e = std::min(r.end, b + block);
      out.push_back({r.shard, b, e, local});
      local += e - b;
    }
  return out;
}

EpochOrder memory_order(int64_t n, bool shuffle, uint64_t seed, int64_t epoch, int rank) {
  EpochOrder o;
  if (shuffle) {
    o.ids = epoch_permutation(n, seed, epoch, rank);
  } else {
    o.ids.resize(static_cast<size_t>(n));
    std::iota(o.ids.begin(), o.ids.end(), int64_t{0});
  }
  return o;
}

EpochOrder bucketed_order(const std::vector<int64_t>& lengths, int64_t batch, int64_t window, uint64_t seed,
                          int64_t epoch, int rank) {
  LOCKSTEP_REQUIRE(batch >= 1 && window >= 1, "bucketing needs a batch and a window of at least 1");
  const auto n = static_cast<int64_t>(lengths.size());
  std::vector<int64_t> perm = epoch_permutation(n, seed, epoch, rank);
  const int64_t span = batch * window;
  for (int64_t w = 0; w < n; w += span) {
    const auto first = perm.begin() + w, last = perm.begin() + std::min(n, w + span);
    std::stable_sort(first, last, [&](int64_t a, int64_t b) {
      return lengths[static_cast<size_t>(a)] < lengths[static_cast<size_t>(b)];
    });
  }
  const int64_t full = n / batch;
  const auto batch_order = epoch_permutation(full, mix_seed(seed, 0xb0c4e7ULL), epoch, rank);
  EpochOrder o;
  o.ids.reserve(static_cast<size_t>(n));
  for (const int64_t b : batch_order) o.ids.insert(o.ids.end(), perm.begin() + b * batch, perm.begin() + (b + 1) * batch);
  o.ids.insert(o.ids.end(), perm.begin() + full * batch, perm.end());
  return o;
}

EpochOrder streaming_order(const std::vector<SampleRange>& ranges, int64_t block, int64_t group, bool shuffle,
                           uint64_t seed, int64_t epoch, int rank) {
  LOCKSTEP_REQUIRE(group >= 1, "shuffle window must be at least 1 block");
  std::vector<Block> blocks = make_blocks(ranges, block);
  if (shuffle) {
    const auto perm = epoch_permutation(static_cast<int64_t>(blocks.size()), seed, epoch, rank);
    std::vector<Block> shuffled;
    for (const int64_t i : perm) shuffled.push_back(blocks[static_cast<size_t>(i)]);
    blocks = std::move(shuffled);
  }
  EpochOrder o;
  for (size_t g = 0; g < blocks.size(); g += static_cast<size_t>(group)) {
    std::vector<Block> members(blocks.begin() + static_cast<std::ptrdiff_t>(g),
                               blocks.begin() + static_cast<std::ptrdiff_t>(std::min(blocks.size(), g + group)));
    std::vector<int64_t> ids;
    for (const Block& b : members)
      for (int64_t i = 0; i < b.size(); ++i) ids.push_back(b.local + i);
    if (shuffle) {
      const uint64_t group_seed = mix_seed(seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(g));
      const auto perm = epoch_permutation(static_cast<int64_t>(ids.size()), group_seed, epoch, rank);
      std::vector<int64_t> permuted;
      for (const int64_t i : perm) permuted.push_back(ids[static_cast<size_t>(i)]);
      ids = std::move(permuted);
    }
    o.group_start.push_back(static_cast<int64_t>(o.ids.size()));
    o.ids.insert(o.ids.end(), ids.begin(), ids.end());
    o.groups.push_back(std::move(members));
  }
  o.group_start.push_back(static_cast<int64_t>(o.ids.size()));
  return o;
}

}  // namespace lockstep::io
