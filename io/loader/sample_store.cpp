// sample_store: see sample_store.hpp.
#include "io/loader/sample_store.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

#include "core/base/error.hpp"
#include "io/loader/shard_plan.hpp"
#include "io/dataset/shard_reader.hpp"
#include "core/base/parallel_for.hpp"

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
                              int rank, int world, int threads) {
  const SplitEntry& entry = m.split(split, dir);
  const auto ranges = plan_rank_ranges(shard_counts(entry), rank, world);
  int64_t n = 0;
  for (const auto& r : ranges) n += r.size();
  std::vector<unsigned char> samples(static_cast<size_t>(n) * m.spec.sample_bytes());
  const int64_t w = m.spec.record_width();
  std::vector<int64_t> labels(static_cast<size_t>(n * w));
  // The samples in pieces of ~16 MiB, read on THREADS threads, 2 x THREADS files open at a
  // time (a split may have more shards than a process may open files). A window's files are
  // opened before its pieces are read: an open error there comes before a read error of an
  // earlier file of the same window.
  struct Piece {
    size_t file;
    int64_t begin, n, at;
  };
  const int64_t piece = std::max<int64_t>(1, (int64_t{16} << 20) / static_cast<int64_t>(m.spec.sample_bytes()));
  const size_t window = static_cast<size_t>(2 * std::max(1, threads));
  int64_t at = 0;
  for (size_t r0 = 0; r0 < ranges.size(); r0 += window) {
    std::vector<std::unique_ptr<ShardFile>> files;
    std::vector<Piece> pieces;
    for (size_t k = r0; k < std::min(ranges.size(), r0 + window); ++k) {
      const SampleRange& r = ranges[k];
      const ShardEntry& s = entry.shards[static_cast<size_t>(r.shard)];
      files.push_back(std::make_unique<ShardFile>(dir + "/" + s.file, m.spec, &s, m.dataset_id));
      for (int64_t b = r.begin; b < r.end; b += piece) {
        const int64_t count = std::min(piece, r.end - b);
        pieces.push_back(Piece{files.size() - 1, b, count, at});
        at += count;
      }
    }
    parallel_for(static_cast<int64_t>(pieces.size()), threads, [&](int64_t k) {
      const Piece& p = pieces[static_cast<size_t>(k)];
      files[p.file]->read(p.begin, p.n, samples.data() + static_cast<size_t>(p.at) * m.spec.sample_bytes(),
                          labels.data() + p.at * w);
    });
  }
  return SampleStore(m.spec, std::move(samples), std::move(labels));
}

}  // namespace lockstep::io
