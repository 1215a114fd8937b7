// sample_store: see sample_store.hpp.
#include "io/loader/sample_store.hpp"

#include <cstring>

#include "core/base/error.hpp"
#include "io/loader/shard_plan.hpp"
#include "io/dataset/shard_reader.hpp"

namespace lockstep::io {

SampleStore::SampleStore(DatasetSpec spec, std::vector<unsigned char> samples,
                         std::vector<int64_t> labels)
    : spec_(std::move(spec)), samples_(std::move(samples)), labels_(std::move(labels)) {}

void SampleStore::gather(const int64_t* idx, int64_t n, void* out_samples, int64_t* out_records) const {
  const size_t sb = spec_.sample_bytes();
  const auto w = static_cast<size_t>(spec_.record_width());
  auto* out = static_cast<unsigned char*>(out_samples);
  for (int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<size_t>(idx[i]);
    std::memcpy(out + static_cast<size_t>(i) * sb, samples_.data() + k * sb, sb);
    std::memcpy(out_records + static_cast<size_t>(i) * w, labels_.data() + k * w, w * sizeof(int64_t));
  }
}

std::vector<int64_t> shard_counts(const SplitEntry& split) {
  std::vector<int64_t> counts;
  for (const auto& s : split.shards) counts.push_back(s.count);
  return counts;
}

SampleStore load_rank_samples(const std::string& dir, const Manifest& m, const std::string& split,
                              int rank, int world) {
  const SplitEntry& entry = m.split(split, dir);
  const auto ranges = plan_rank_ranges(shard_counts(entry), rank, world);
  int64_t n = 0;
  for (const auto& r : ranges) n += r.size();
  std::vector<unsigned char> samples(static_cast<size_t>(n) * m.spec.sample_bytes());
  const int64_t w = m.spec.record_width();
  std::vector<int64_t> labels(static_cast<size_t>(n * w));
  int64_t at = 0;
  for (const auto& r : ranges) {
    const ShardEntry& s = entry.shards[static_cast<size_t>(r.shard)];
    ShardFile f(dir + "/" + s.file, m.spec, &s, m.dataset_id);
    f.read(r.begin, r.size(), samples.data() + static_cast<size_t>(at) * m.spec.sample_bytes(),
           labels.data() + at * w);
    at += r.size();
  }
  return SampleStore(m.spec, std::move(samples), std::move(labels));
}

}  // namespace lockstep::io
