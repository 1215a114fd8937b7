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
// --ranks P (P > 1): what one node serves to P ranks. P processes, each reading its rank's
// slice in stream mode with --threads read threads (what P ranks of a job do), released
// together once every one has opened its reader; the node's MiB/s is all their samples over
// the wall time from that release to the last one's end. Printed after the one-rank rows;
// --one-rank 0 leaves those out (the raw read stays, as the reference): what a sweep over
// node layouts that has the one-rank rows from a --ranks 1 run needs.
//
//   reader_bench DATASET_DIR [--split train] [--batch 64] [--reps 3] [--block N] [--cold 0|1] [--threads 1]
//                [--ranks 1] [--one-rank 1]
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
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
struct ReadSpec {
  std::string dir, split;
  int64_t batch = 64, block = 0;
  int threads = 1;
};

ReaderOptions reader_options(const ReadSpec& r, const char* mode) {
  ReaderOptions opt;
  opt.mode = std::string(mode) == "memory" ? ReadMode::kMemory : ReadMode::kStream;
  opt.block_samples = r.block;
  opt.read_threads = r.threads;
  return opt;
}

void run_epoch(const RankReader& reader, int64_t batch) {
  EpochLoader loader(reader, reader.order(true, 1, 0), batch, reader.size() / batch, 0, 4);
  while (loader.next()) {
  }
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double reader_epoch(const ReadSpec& r, const Manifest& m, const char* mode, double* open_s) {
  auto t0 = Clock::now();
  const RankReader reader(r.dir, m, r.split, 0, 1, reader_options(r, mode));
  *open_s = seconds_since(t0);
  t0 = Clock::now();
  run_epoch(reader, r.batch);
  return seconds_since(t0);
}

// One rank of node_epoch, in a child process: opens its reader, says 'R' (or 'E', and why on
// stderr) on READY and closes it, waits for the release byte on GO, reads its epoch. Never
// returns: exits 0, or 1 on any failure.
[[noreturn]] void node_rank(const ReadSpec& r, const Manifest& m, int rank, int ranks, int ready, int go) {
  const auto fail = [&](const std::exception& e) {
    std::fprintf(stderr, "reader_bench: rank %d of %d: %s\n", rank, ranks, e.what());
  };
  std::unique_ptr<RankReader> reader;
  char c = 'R';
  try {
    reader = std::make_unique<RankReader>(r.dir, m, r.split, rank, ranks, reader_options(r, "stream"));
  } catch (const std::exception& e) {
    fail(e);
    c = 'E';
  }
  const bool told = ::write(ready, &c, 1) == 1;
  ::close(ready);  // with every live rank's closed, a dead rank's missing byte reads as EOF
  if (!told || c != 'R' || ::read(go, &c, 1) != 1) ::_exit(1);
  int rc = 0;
  try {
    run_epoch(*reader, r.batch);
  } catch (const std::exception& e) {
    fail(e);
    rc = 1;
  }
  reader.reset();
  ::_exit(rc);
}

// RANKS processes reading one stream-mode epoch each (see --ranks above); the seconds from
// their release to the last one's end. Forked before this process starts any thread.
double node_epoch(const ReadSpec& r, const Manifest& m, int ranks) {
  int ready[2], go[2];
  if (::pipe(ready) != 0 || ::pipe(go) != 0) throw lockstep::Error("--ranks: pipe failed");
  std::vector<pid_t> kids;
  for (int rank = 0; rank < ranks; ++rank) {
    const pid_t pid = ::fork();
    if (pid < 0) throw lockstep::Error("--ranks: fork failed");
    if (pid == 0) {
      ::close(ready[0]);
      ::close(go[1]);
      node_rank(r, m, rank, ranks, ready[1], go[0]);
    }
    kids.push_back(pid);
  }
  ::close(ready[1]);
  ::close(go[0]);
  bool opened = true;
  for (int i = 0; i < ranks; ++i) {
    char c = 0;
    opened = ::read(ready[0], &c, 1) == 1 && c == 'R' && opened;
  }
  const auto t0 = Clock::now();
  const std::string release(static_cast<size_t>(ranks), 'G');
  // A rank that failed to open: the others read EOF instead of the release and exit at once.
  const bool released =
      opened && ::write(go[1], release.data(), release.size()) == static_cast<ssize_t>(release.size());
  ::close(go[1]);
  ::close(ready[0]);
  bool ok = opened && released;
  for (const pid_t pid : kids) {
    int status = 0;
    ok = ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 && ok;
  }
  const double s = seconds_since(t0);
  if (!ok) throw lockstep::Error("--ranks " + std::to_string(ranks) + ": a rank failed (its line above)");
  return s;
}

void drop_page_cache() {
  ::sync();
  const int fd = ::open("/proc/sys/vm/drop_caches", O_WRONLY);
  if (fd < 0 || ::write(fd, "3", 1) != 1) throw lockstep::Error("--cold needs root (cannot write /proc/sys/vm/drop_caches)");
  ::close(fd);
}

using lockstep::bench::Series;

// OPTION's VALUE as an integer in [LO, HI]; false (after one line naming it) otherwise.
bool parse_int(const char* option, const char* value, int64_t lo, int64_t hi, int64_t* out) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || v < lo || v > hi) {
    std::fprintf(stderr, "reader_bench: %s %s: not an integer from %lld to %lld\n", option, value,
                 static_cast<long long>(lo), static_cast<long long>(hi));
    return false;
  }
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: reader_bench DATASET_DIR [--split S] [--batch B] [--reps R] [--block N] [--cold 0|1] "
                         "[--threads T] [--ranks P] [--one-rank 0|1]\n");
    return 2;
  }
  ReadSpec spec;
  spec.dir = argv[1];
  spec.split = "train";
  int64_t reps = 3, ranks = 1, threads = 1, cold = 0, one_rank = 1;
  for (int i = 2; i < argc; i += 2) {
    const std::string k = argv[i];
    if (i + 1 == argc) {
      std::fprintf(stderr, "reader_bench: %s needs a value\n", k.c_str());
      return 2;
    }
    const char* v = argv[i + 1];
    bool ok = true;
    if (k == "--split") spec.split = v;
    else if (k == "--batch") ok = parse_int("--batch", v, 1, int64_t{1} << 30, &spec.batch);
    else if (k == "--reps") ok = parse_int("--reps", v, 1, 1000, &reps);
    else if (k == "--block") ok = parse_int("--block", v, 0, int64_t{1} << 30, &spec.block);
    else if (k == "--cold") ok = parse_int("--cold", v, 0, 1, &cold);
    else if (k == "--threads") ok = parse_int("--threads", v, 1, 1024, &threads);
    else if (k == "--ranks") ok = parse_int("--ranks", v, 1, 1024, &ranks);
    else if (k == "--one-rank") ok = parse_int("--one-rank", v, 0, 1, &one_rank);
    else { std::fprintf(stderr, "reader_bench: unknown option %s\n", k.c_str()); return 2; }
    if (!ok) return 2;
  }
  spec.threads = static_cast<int>(threads);
  if (one_rank == 0 && ranks == 1) {
    std::fprintf(stderr, "reader_bench: --one-rank 0 needs --ranks > 1 (nothing else would be measured)\n");
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);  // node_epoch's release write when every rank has died: an error, not a kill
  try {
    const Manifest m = read_manifest(spec.dir);
    std::vector<std::string> files;
    for (const auto& s : m.split(spec.split, spec.dir).shards) files.push_back(spec.dir + "/" + s.file);
    // Each rank reads its slice in whole batches: a batch larger than a rank's share reads
    // nothing (and a figure over the whole split would be made up).
    const int64_t count = m.split(spec.split, spec.dir).count(), share = count / ranks;
    if (share < spec.batch) {
      std::fprintf(stderr, "reader_bench: --batch %lld is more than each of --ranks %lld ranks' %lld samples of %s\n",
                   static_cast<long long>(spec.batch), static_cast<long long>(ranks), static_cast<long long>(share),
                   spec.split.c_str());
      return 2;
    }
    const double mb = static_cast<double>(m.spec.sample_bytes()) / (1 << 20);
    const double payload_mb = static_cast<double>(count / spec.batch * spec.batch) * mb;  // one rank's epoch
    const double node_mb = static_cast<double>(ranks * (share / spec.batch * spec.batch)) * mb;  // the node's
    int64_t bytes = 0;
    double open_s = 0.0;
    raw_read(files, &bytes);  // warm the page cache
    const double file_mb = static_cast<double>(bytes) / (1 << 20);
    Series raw, load, mem, stream, node;
    const auto cool = [&] { if (cold) drop_page_cache(); };
    // The node's ranks first: fork() while this process has no thread yet.
    for (int64_t r = 0; ranks > 1 && r < reps; ++r) {
      cool();
      node.v.push_back(node_mb / node_epoch(spec, m, static_cast<int>(ranks)));
    }
    for (int64_t r = 0; r < reps; ++r) {
      cool();
      raw.v.push_back(file_mb / raw_read(files, &bytes));
      if (!one_rank) continue;
      cool();
      mem.v.push_back(payload_mb / reader_epoch(spec, m, "memory", &open_s));
      load.v.push_back(payload_mb / open_s);
      cool();
      const double epoch_s = reader_epoch(spec, m, "stream", &open_s);
      stream.v.push_back(payload_mb / (open_s + epoch_s));
    }
    std::printf("dataset %s split %s: %zu shard(s), %.1f MiB of files, %.1f MiB of samples, batch %lld, %d read thread(s)\n",
                spec.dir.c_str(), spec.split.c_str(), files.size(), file_mb, payload_mb,
                static_cast<long long>(spec.batch), spec.threads);
    std::printf("%-34s %10s %10s %10s %8s\n", cold ? "read path (cold cache)" : "read path (warm cache)", "MiB/s",
                "min", "max", "vs raw");
    const auto row = [&](const std::string& name, const Series& s) {
      std::printf("%-34s %10.0f %10.0f %10.0f %7.0f%%\n", name.c_str(), s.median(), s.lo(), s.hi(),
                  100.0 * s.median() / raw.median());
    };
    row("raw sequential read() of the files", raw);
    if (one_rank) {
      row("reader, memory mode: load (once)", load);
      row("reader, memory mode: epoch", mem);
      row("reader, stream mode: open+epoch", stream);
    }
    if (ranks > 1) row("node of " + std::to_string(ranks) + " ranks, stream: epoch", node);
    std::printf("{\"cache\": \"%s\", \"read_threads\": %d, \"raw_mib_s\": %.1f, \"raw_min\": %.1f, \"raw_max\": %.1f",
                cold ? "cold" : "warm", spec.threads, raw.median(), raw.lo(), raw.hi());
    if (one_rank) {
      std::printf(", \"memory_load_mib_s\": %.1f, \"memory_epoch_mib_s\": %.1f, \"memory_epoch_min\": %.1f, "
                  "\"memory_epoch_max\": %.1f, \"stream_mib_s\": %.1f, \"stream_min\": %.1f, \"stream_max\": %.1f",
                  load.median(), mem.median(), mem.lo(), mem.hi(), stream.median(), stream.lo(), stream.hi());
    }
    if (ranks > 1) {
      std::printf(", \"node_ranks\": %d, \"node_mib_s\": %.1f, \"node_min\": %.1f, \"node_max\": %.1f", ranks,
                  node.median(), node.lo(), node.hi());
    }
    std::printf("}\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reader_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
