// reader_bench: read throughput of lockstep's shard reader against a raw sequential read
// of the same files, in one run, interleaved (raw, memory, stream, raw, ...), median and
// min-max of each. By default the page cache is warm for all three (the files are read
// once first): that measures the reader's own cost over the bytes. --cold 1 drops the page
// cache before every measurement (root only): that measures what a job reading data larger
// than memory sees from the disk.
//
// --threads N: the reader's read threads (--data.read-threads). Shards lockstep writes are
// read by the chunk reader (io/dataset/chunk_reader.hpp) whatever N is.
//
//   reader_bench DATASET_DIR [--split train] [--batch 64] [--reps 3] [--block N] [--cold 0|1] [--threads 1]
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/series.hpp"
#include "io/loader/epoch_loader.hpp"
#include "io/util/file_util.hpp"
#include "io/loader/rank_reader.hpp"
#include "io/dataset/shard_format.hpp"

using namespace lockstep::io;
using Clock = std::chrono::steady_clock;

namespace {

double raw_read(const std::vector<std::string>& files, int64_t* bytes) {
  std::vector<char> buf(4 << 20);
  const auto t0 = Clock::now();
  *bytes = 0;
  for (const auto& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY);
    if (fd < 0) throw lockstep::Error("cannot open " + f);
    for (ssize_t n; (n = ::read(fd, buf.data(), buf.size())) > 0;) *bytes += n;
    ::close(fd);
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Opens the reader (memory mode loads the data here; OPEN_S gets that time) and runs one
// shuffled epoch of batches; returns the epoch's seconds.
double reader_epoch(const std::string& dir, const Manifest& m, const std::string& split, const char* mode,
                    int64_t batch, int64_t block, int threads, double* open_s) {
  auto t0 = Clock::now();
  ReaderOptions opt;
  opt.mode = std::string(mode) == "memory" ? ReadMode::kMemory : ReadMode::kStream;
  opt.block_samples = block;
  opt.read_threads = threads;
  const RankReader reader(dir, m, split, 0, 1, opt);
  *open_s = std::chrono::duration<double>(Clock::now() - t0).count();
  t0 = Clock::now();
  const int64_t steps = reader.size() / batch;
  EpochLoader loader(reader, reader.order(true, 1, 0), batch, steps, 0, 4);
  while (loader.next()) {
  }
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void drop_page_cache() {
  ::sync();
  const int fd = ::open("/proc/sys/vm/drop_caches", O_WRONLY);
  if (fd < 0 || ::write(fd, "3", 1) != 1) throw lockstep::Error("--cold needs root (cannot write /proc/sys/vm/drop_caches)");
  ::close(fd);
}

using lockstep::bench::Series;

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: reader_bench DATASET_DIR [--split S] [--batch B] [--reps R] [--block N] [--cold 0|1] [--threads T]\n");
    return 2;
  }
  const std::string dir = argv[1];
  std::string split = "train";
  int64_t batch = 64, reps = 3, block = 0;
  bool cold = false;
  int threads = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--split") split = argv[i + 1];
    else if (k == "--batch") batch = std::stoll(argv[i + 1]);
    else if (k == "--reps") reps = std::stoll(argv[i + 1]);
    else if (k == "--block") block = std::stoll(argv[i + 1]);
    else if (k == "--cold") cold = std::string(argv[i + 1]) == "1";
    else if (k == "--threads") threads = std::stoi(argv[i + 1]);
    else { std::fprintf(stderr, "unknown option %s\n", k.c_str()); return 2; }
  }
  try {
    const Manifest m = read_manifest(dir);
    std::vector<std::string> files;
    for (const auto& s : m.split(split, dir).shards) files.push_back(dir + "/" + s.file);
    const double payload_mb = static_cast<double>(m.split(split, dir).count()) *
                              static_cast<double>(m.spec.sample_bytes()) / (1 << 20);
    int64_t bytes = 0;
    double open_s = 0.0;
    raw_read(files, &bytes);  // warm the page cache
    const double file_mb = static_cast<double>(bytes) / (1 << 20);
    Series raw, load, mem, stream;
    const auto cool = [&] { if (cold) drop_page_cache(); };
    for (int64_t r = 0; r < reps; ++r) {
      cool();
      raw.v.push_back(file_mb / raw_read(files, &bytes));
      cool();
      mem.v.push_back(payload_mb / reader_epoch(dir, m, split, "memory", batch, block, threads, &open_s));
      load.v.push_back(payload_mb / open_s);
      cool();
      const double epoch_s = reader_epoch(dir, m, split, "stream", batch, block, threads, &open_s);
      stream.v.push_back(payload_mb / (open_s + epoch_s));
    }
    std::printf("dataset %s split %s: %zu shard(s), %.1f MiB of files, %.1f MiB of samples, batch %lld, %d read thread(s)\n",
                dir.c_str(), split.c_str(), files.size(), file_mb, payload_mb, static_cast<long long>(batch), threads);
    std::printf("%-34s %10s %10s %10s %8s\n", cold ? "read path (cold cache)" : "read path (warm cache)", "MiB/s",
                "min", "max", "vs raw");
    const auto row = [&](const char* name, const Series& s) {
      std::printf("%-34s %10.0f %10.0f %10.0f %7.0f%%\n", name, s.median(), s.lo(), s.hi(),
                  100.0 * s.median() / raw.median());
    };
    row("raw sequential read() of the files", raw);
    row("reader, memory mode: load (once)", load);
    row("reader, memory mode: epoch", mem);
    row("reader, stream mode: open+epoch", stream);
    std::printf("{\"cache\": \"%s\", \"read_threads\": %d, \"raw_mib_s\": %.1f, \"raw_min\": %.1f, \"raw_max\": %.1f, "
                "\"memory_load_mib_s\": %.1f, \"memory_epoch_mib_s\": %.1f, \"memory_epoch_min\": %.1f, "
                "\"memory_epoch_max\": %.1f, \"stream_mib_s\": %.1f, \"stream_min\": %.1f, \"stream_max\": %.1f}\n",
                cold ? "cold" : "warm", threads, raw.median(), raw.lo(), raw.hi(), load.median(), mem.median(), mem.lo(), mem.hi(),
                stream.median(), stream.lo(), stream.hi());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reader_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
