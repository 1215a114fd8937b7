// rank_reader: see rank_reader.hpp.
#include "io/loader/rank_reader.hpp"

#include <algorithm>
#include <cstring>

#include "core/base/error.hpp"

namespace lockstep::io {

RankReader::RankReader(const std::string& dir, const Manifest& m, const std::string& split, int rank, int world,
                       const ReaderOptions& opt)
    : spec_(m.spec), rank_(rank), bucket_batches_(opt.bucket_batches) {
  const SplitEntry& entry = m.split(split, dir);
  ranges_ = plan_rank_ranges(shard_counts(entry), rank, world);
  for (const auto& r : ranges_) size_ += r.size();
  const double share_mb = static_cast<double>(size_) * static_cast<double>(spec_.sample_bytes()) / (1 << 20);
  const bool memory = opt.mode == ReadMode::kMemory || (opt.mode == ReadMode::kAuto && share_mb <= static_cast<double>(opt.memory_budget_mb));
  if (memory) {
    store_.emplace(load_rank_samples(dir, m, split, rank, world));
    return;
  }
  files_.resize(entry.shards.size());
  for (const auto& r : ranges_) {
    const ShardEntry& s = entry.shards[static_cast<size_t>(r.shard)];
    if (!files_[static_cast<size_t>(r.shard)])
      files_[static_cast<size_t>(r.shard)] = std::make_unique<ShardFile>(dir + "/" + s.file, spec_, &s, m.dataset_id);
  }
  block_ = opt.block_samples > 0 ? opt.block_samples
                                 : std::max<int64_t>(1, (4 << 20) / static_cast<int64_t>(spec_.sample_bytes()));
  group_ = std::max<int64_t>(1, opt.shuffle_blocks);
}

EpochOrder RankReader::order(bool shuffle, uint64_t seed, int64_t epoch, int64_t batch) const {
  if (shuffle && batch > 0 && bucketing()) {
    std::vector<int64_t> lengths(static_cast<size_t>(size_));
    const int64_t w = spec_.record_width();
    for (int64_t i = 0; i < size_; ++i) lengths[static_cast<size_t>(i)] = record_length(spec_, store_->raw_labels() + i * w);
    return bucketed_order(lengths, batch, bucket_batches_, seed, epoch, rank_);
  }
  if (store_) return memory_order(size_, shuffle, seed, epoch, rank_);
  return streaming_order(ranges_, block_, group_, shuffle, seed, epoch, rank_);
}

void RankReader::load_group(const EpochOrder& order, int64_t g, StreamCache& cache) const {
  const auto& blocks = order.groups[static_cast<size_t>(g)];
  int64_t n = 0;
  for (const Block& b : blocks) n += b.size();
  const size_t sb = spec_.sample_bytes();
  cache.samples.resize(static_cast<size_t>(n) * sb);
  const int64_t w = spec_.record_width();
  cache.labels.resize(static_cast<size_t>(n * w));
  int64_t at = 0;
  for (const Block& b : blocks) {
    files_[static_cast<size_t>(b.shard)]->read(b.begin, b.size(), cache.samples.data() + static_cast<size_t>(at) * sb,
                                               cache.labels.data() + at * w);
    at += b.size();
  }
  cache.group = g;
}

void RankReader::fill(const EpochOrder& order, int64_t pos, int64_t n, void* samples, int64_t* records,
                      StreamCache& cache) const {
  const int64_t total = static_cast<int64_t>(order.ids.size());
  LOCKSTEP_REQUIRE(total > 0, "rank " + std::to_string(rank_) + " has no samples to read");
  const size_t sb = spec_.sample_bytes();
  auto* out = static_cast<unsigned char*>(samples);
  if (store_) {
    std::vector<int64_t> ids(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = order.ids[static_cast<size_t>((pos + i) % total)];
    store_->gather(ids.data(), n, samples, records);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t q = (pos + i) % total;
    if (cache.group < 0 || q < order.group_start[static_cast<size_t>(cache.group)] ||
        q >= order.group_start[static_cast<size_t>(cache.group) + 1]) {
      const auto it = std::upper_bound(order.group_start.begin(), order.group_start.end(), q);
      load_group(order, (it - order.group_start.begin()) - 1, cache);
    }
    // Position of this id inside the loaded group: find its block (a group has few).
    const int64_t id = order.ids[static_cast<size_t>(q)];
    int64_t offset = 0;
    for (const Block& b : order.groups[static_cast<size_t>(cache.group)]) {
      if (id >= b.local && id < b.local + b.size()) {
        offset += id - b.local;
        break;
      }
      offset += b.size();
    }
    std::memcpy(out + static_cast<size_t>(i) * sb, cache.samples.data() + static_cast<size_t>(offset) * sb, sb);
    const auto w = static_cast<size_t>(spec_.record_width());
    std::memcpy(records + static_cast<size_t>(i) * w, cache.labels.data() + static_cast<size_t>(offset) * w,
                w * sizeof(int64_t));
  }
}

}  // namespace lockstep::io
