// share_check: see share_check.hpp.
#include "core/data/share_check.hpp"

#include <cstring>

#include "core/base/log.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "io/loader/share_balance.hpp"

namespace lockstep {
namespace {

constexpr int kFields = 4;  // samples, worst class, observed, expected: one fixed-size record per rank
constexpr int kNamedRanks = 8;

std::string remedy(const io::RankReader& train, const io::Manifest& m) {
  std::string r;
  if (m.sample_order == io::SampleOrder::kSource)
    r = "the dataset keeps its input's order inside each shard (imported with --no-shuffle, or by a lockstep older "
        "than the shuffled order): re-import it with `lockstep shard` without --no-shuffle, or with --shards at "
        "least the number of ranks";
  else
    r = "re-import with more shards (--shards at least the number of ranks) or another --seed";
  if (!train.dealt())
    r += "; --data.mode stream (or a --data.memory-budget-mb that holds the whole split) deals each rank a new "
         "share every epoch";
  return r;
}

}  // namespace

void check_rank_shares(const io::RankReader& train, const io::Manifest& m, const std::string& split, uint64_t seed,
                      int64_t epoch, const MpiRuntime& mpi) {
  double mine[kFields] = {0, -1, 0, 0};
  if (m.spec.labeled && !m.spec.sequence_targets()) {
    const io::ShareBalance b =
        io::judge_share(train.share_labels(seed, epoch), m.split(split, "").histogram(m.spec.num_classes));
    mine[0] = static_cast<double>(b.samples);
    mine[1] = static_cast<double>(b.worst_class);
    mine[2] = static_cast<double>(b.observed);
    mine[3] = b.expected;
  }
  std::vector<uint8_t> bytes(sizeof mine);
  std::memcpy(bytes.data(), mine, sizeof mine);
  const std::vector<uint8_t> all = mpi.gather_bytes(bytes, 0);
  if (mpi.rank() == 0) {
    std::vector<std::string> lines;
    for (int r = 0; r < mpi.size(); ++r) {
      double f[kFields];
      std::memcpy(f, all.data() + static_cast<size_t>(r) * sizeof f, sizeof f);
      io::ShareBalance b;
      b.samples = static_cast<int64_t>(f[0]);
      b.worst_class = static_cast<int64_t>(f[1]);
      b.observed = static_cast<int64_t>(f[2]);
      b.expected = f[3];
      if (!b.fair()) lines.push_back(io::share_text(b, r, m.spec.class_names));
    }
    for (size_t i = 0; i < lines.size() && i < kNamedRanks; ++i)
      log::warn(lines[i] + " in epoch " + std::to_string(epoch) + " of split '" + split + "': its training is biased; " +
                remedy(train, m));
    if (lines.size() > kNamedRanks)
      log::warn(std::to_string(lines.size() - kNamedRanks) + " more rank(s) train on a biased share of split '" + split + "'");
  }
}

}  // namespace lockstep
