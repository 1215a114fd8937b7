// rank_reader: see rank_reader.hpp.
#include "io/loader/rank_reader.hpp"

#include <algorithm>
#include <cstring>

#include "core/base/error.hpp"
#include "core/base/parallel_for.hpp"

namespace lockstep::io {

RankReader::RankReader(const std::string& dir, const Manifest& m, const std::string& split, int rank, int world,
                       const ReaderOptions& opt)
    : spec_(m.spec), rank_(rank), world_(world), bucket_batches_(opt.bucket_batches),
      read_threads_(std::max(1, opt.read_threads)) {
  const SplitEntry& entry = m.split(split, dir);
  counts_ = shard_counts(entry);
  ranges_ = plan_rank_ranges(counts_, rank, world);
  for (const auto& r : ranges_) size_ += r.size();
  block_ = opt.block_samples > 0 ? opt.block_samples
                                 : std::max<int64_t>(1, (4 << 20) / static_cast<int64_t>(spec_.sample_bytes()));
  group_ = std::max<int64_t>(1, opt.shuffle_blocks);
  const double mb_per_sample = static_cast<double>(spec_.sample_bytes()) / (1 << 20);
  const auto fits = [&](int64_t samples) {
    return static_cast<double>(samples) * mb_per_sample <= static_cast<double>(opt.memory_budget_mb);
  };
  bool memory = opt.mode == ReadMode::kMemory || (opt.mode == ReadMode::kAuto && fits(size_));
  if (opt.redeal) {
    const int64_t total = entry.count();
    if (opt.mode != ReadMode::kStream && fits(total)) {
      deal_ = Deal::kSamples;
      size_ = dealt_sample_count(counts_, rank, world);
      store_.emplace(load_rank_samples(dir, m, split, 0, 1, read_threads_));
      int64_t at = 0;
      for (const int64_t c : counts_) {
        shard_offset_.push_back(at);
        at += c;
      }
      return;
    }
    memory = opt.mode == ReadMode::kMemory;  // the share fits only: the fixed plan
    if (!memory) {
      deal_ = Deal::kBlocks;
      size_ = dealt_sample_count(counts_, rank, world);
    }
  }
  if (memory) {
    store_.emplace(load_rank_samples(dir, m, split, rank, world, read_threads_));
    return;
  }
  files_.resize(entry.shards.size());
  for (size_t s = 0; s < entry.shards.size(); ++s) {
    const bool needed = deal_ == Deal::kBlocks || std::any_of(ranges_.begin(), ranges_.end(), [&](const SampleRange& r) {
                          return r.shard == static_cast<int>(s);
                        });
    if (needed) files_[s] = std::make_unique<ShardFile>(dir + "/" + entry.shards[s].file, spec_, &entry.shards[s], m.dataset_id);
  }
}

std::vector<SampleRange> RankReader::epoch_ranges(bool shuffle, uint64_t seed, int64_t epoch) const {
  if (!shuffle || deal_ == Deal::kFixed) return ranges_;
  return deal_rank_ranges(counts_, deal_ == Deal::kSamples ? 1 : block_, seed, epoch, rank_, world_);
}

std::vector<int64_t> RankReader::store_ids(const std::vector<SampleRange>& ranges) const {
  std::vector<int64_t> ids;
  ids.reserve(static_cast<size_t>(size_));
  for (const auto& r : ranges)
    for (int64_t i = r.begin; i < r.end; ++i)
      ids.push_back(deal_ == Deal::kSamples ? shard_offset_[static_cast<size_t>(r.shard)] + i : static_cast<int64_t>(ids.size()));
  return ids;
}

EpochOrder RankReader::order(bool shuffle, uint64_t seed, int64_t epoch, int64_t batch) const {
  if (!store_) return streaming_order(epoch_ranges(shuffle, seed, epoch), block_, group_, shuffle, seed, epoch, rank_);
  // Memory: an order over the rank's share, then mapped to the store's sample ids.
  const std::vector<int64_t> ids = store_ids(epoch_ranges(shuffle, seed, epoch));
  EpochOrder o;
  if (shuffle && batch > 0 && bucketing()) {
    std::vector<int64_t> lengths(ids.size());
    const int64_t w = spec_.record_width();
    for (size_t i = 0; i < ids.size(); ++i) lengths[i] = record_length(spec_, store_->raw_labels() + ids[i] * w);
    o = bucketed_order(lengths, batch, bucket_batches_, seed, epoch, rank_);
  } else {
    o = memory_order(size_, shuffle, seed, epoch, rank_);
  }
  for (int64_t& id : o.ids) id = ids[static_cast<size_t>(id)];
  return o;
}

std::vector<int64_t> RankReader::share_labels(uint64_t seed, int64_t epoch) const {
  std::vector<int64_t> labels;
  if (!spec_.labeled) return labels;
  const std::vector<SampleRange> ranges = epoch_ranges(/*shuffle=*/true, seed, epoch);
  if (store_) {
    const int64_t w = spec_.record_width();
    for (const int64_t id : store_ids(ranges)) labels.push_back(store_->raw_labels()[id * w]);
    return labels;
  }
  for (const auto& r : ranges) {
    const auto part = files_[static_cast<size_t>(r.shard)]->read_class_labels(r.begin, r.size());
    labels.insert(labels.end(), part.begin(), part.end());
  }
  return labels;
}

void RankReader::load_group(const EpochOrder& order, int64_t g, StreamCache& cache) const {
  const auto& blocks = order.groups[static_cast<size_t>(g)];
  std::vector<int64_t> at(blocks.size() + 1, 0);  // each block's first sample in the window; the last: the total
  for (size_t k = 0; k < blocks.size(); ++k) at[k + 1] = at[k] + blocks[k].size();
  const int64_t n = at.back();
  const size_t sb = spec_.sample_bytes();
  cache.samples.resize(static_cast<size_t>(n) * sb);
  const int64_t w = spec_.record_width();
  cache.labels.resize(static_cast<size_t>(n * w));
  cache.group = -1;  // until every block is in
  parallel_for(static_cast<int64_t>(blocks.size()), read_threads_, [&](int64_t k) {
    const Block& b = blocks[static_cast<size_t>(k)];
    const int64_t a = at[static_cast<size_t>(k)];
    files_[static_cast<size_t>(b.shard)]->read(b.begin, b.size(), cache.samples.data() + static_cast<size_t>(a) * sb,
                                               cache.labels.data() + a * w);
  });
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
