// checksum_bench: what integrity checking costs the shard reader (issue 11). From one
// dataset split it writes three copies of the same samples — plain chunks (no check, the
// baseline), Fletcher-32 per chunk (what `lockstep shard` writes: HDF5 verifies every
// chunk it reads) and plain chunks verified by a whole-file CRC-32 at open (what older
// datasets get: one extra read per run) — and times loading each in memory mode and one
// shuffled stream-mode epoch, interleaved, median and min-max of REPS. Warm page cache.
//
//   checksum_bench DATASET_DIR WORK_DIR [--split train] [--reps 5] [--batch 64]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/series.hpp"
#include "io/loader/epoch_loader.hpp"
#include "io/util/file_util.hpp"
#include "io/loader/rank_reader.hpp"
#include "io/loader/sample_store.hpp"
#include "io/dataset/shard_writer.hpp"

using namespace lockstep::io;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A copy of SPLIT with or without chunk checksums; returns its manifest.
Manifest copy_split(const SampleStore& store, const Manifest& m, const std::string& split, const std::string& out,
                    bool checksums, int shards) {
  make_dirs(out);
  for (const auto& f : list_dir(out)) remove_file(out + "/" + f);
  Manifest c;
  c.spec = m.spec;
  WriteOptions opt;
  opt.chunk_checksums = checksums;
  c.splits.emplace_back(split, write_split(out, split, m.spec, store.raw_samples(), store.raw_labels(), store.size(),
                                           shards, opt));
  write_manifest(out, c);
  return c;
}

using lockstep::bench::Series;

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: checksum_bench DATASET_DIR WORK_DIR [--split S] [--reps R] [--batch B]\n");
    return 2;
  }
  const std::string dir = argv[1], work = argv[2];
  std::string split = "train";
  int64_t reps = 5, batch = 64;
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--split") split = argv[i + 1];
    else if (k == "--reps") reps = std::stoll(argv[i + 1]);
    else if (k == "--batch") batch = std::stoll(argv[i + 1]);
    else { std::fprintf(stderr, "unknown option %s\n", k.c_str()); return 2; }
  }
  try {
    const Manifest src = read_manifest(dir);
    const SampleStore all = load_rank_samples(dir, src, split, 0, 1);
    const int shards = static_cast<int>(src.split(split, dir).shards.size());
    const Manifest plain = copy_split(all, src, split, work + "/plain", false, shards);
    const Manifest fletcher = copy_split(all, src, split, work + "/fletcher", true, shards);
    const double mib = static_cast<double>(all.size()) * static_cast<double>(src.spec.sample_bytes()) / (1 << 20);
    // Memory mode: load every sample. Stream mode: one shuffled epoch after opening (the
    // open, where an older dataset's CRC is checked, is timed apart).
    const auto load_plain_unchecked = [&] {
      std::vector<unsigned char> samples(static_cast<size_t>(all.size()) * src.spec.sample_bytes());
      std::vector<int64_t> labels(static_cast<size_t>(all.size()));
      int64_t at = 0;
      for (const auto& e : plain.split(split, work + "/plain").shards) {
        ShardFile f(work + "/plain/" + e.file, plain.spec);  // no manifest entry: no check at all
        f.read(0, f.count(), samples.data() + static_cast<size_t>(at) * src.spec.sample_bytes(), labels.data() + at);
        at += f.count();
      }
    };
    const auto load = [&](const std::string& path, const Manifest& m) {
      ReaderOptions mem;
      mem.mode = ReadMode::kMemory;
      RankReader reader(path, m, split, 0, 1, mem);
    };
    const auto stream = [&](const std::string& path, const Manifest& m, int64_t epoch, double* open_s) {
      ReaderOptions str;
      str.mode = ReadMode::kStream;
      auto t0 = Clock::now();
      RankReader reader(path, m, split, 0, 1, str);
      *open_s = since(t0);
      t0 = Clock::now();
      EpochLoader loader(reader, reader.order(true, 1, epoch), batch, reader.size() / batch, 0, 4);
      while (loader.next()) {
      }
      return since(t0);
    };
    Series load_base, load_fl, load_crc, stream_base, stream_fl, open_crc, open_fl;
    for (int64_t r = 0; r <= reps; ++r) {  // round 0 warms up
      double o1 = 0, o2 = 0;
      auto t0 = Clock::now();
      load_plain_unchecked();
      const double lb = since(t0);
      t0 = Clock::now();
      load(work + "/fletcher", fletcher);
      const double lf = since(t0);
      t0 = Clock::now();
      load(work + "/plain", plain);
      const double lc = since(t0);
      const double sb = stream(work + "/plain", plain, r, &o1);
      const double sf = stream(work + "/fletcher", fletcher, r, &o2);
      if (r == 0) continue;
      load_base.v.push_back(mib / lb);
      load_fl.v.push_back(mib / lf);
      load_crc.v.push_back(mib / lc);
      stream_base.v.push_back(mib / sb);
      stream_fl.v.push_back(mib / sf);
      open_crc.v.push_back(1000 * o1);
      open_fl.v.push_back(1000 * o2);
    }
    std::printf("split %s of %s: %lld samples, %.1f MiB, %d shard(s), warm page cache, median (min-max) of %lld\n",
                split.c_str(), dir.c_str(), static_cast<long long>(all.size()), mib, shards, static_cast<long long>(reps));
    const auto row = [](const char* name, const Series& s, const Series& base, const char* unit) {
      std::printf("%-52s %8.0f %s (%.0f-%.0f) %5.0f%% of baseline\n", name, s.median(), unit, s.lo(), s.hi(),
                  100.0 * s.median() / base.median());
    };
    row("memory load, no check (baseline)", load_base, load_base, "MiB/s");
    row("memory load, Fletcher-32 per chunk (new shards)", load_fl, load_base, "MiB/s");
    row("memory load, CRC-32 of each file at open (old shards)", load_crc, load_base, "MiB/s");
    row("stream epoch, no per-read check (baseline)", stream_base, stream_base, "MiB/s");
    row("stream epoch, Fletcher-32 per chunk", stream_fl, stream_base, "MiB/s");
    std::printf("%-52s %8.1f ms (%.1f-%.1f)\n", "stream open, Fletcher-32 shards", open_fl.median(), open_fl.lo(), open_fl.hi());
    std::printf("%-52s %8.1f ms (%.1f-%.1f)\n", "stream open, old shards (CRC-32 of each file)", open_crc.median(),
                open_crc.lo(), open_crc.hi());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "checksum_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
