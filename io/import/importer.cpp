// importer: see importer.hpp.
#include "io/import/importer.hpp"
#include "io/dataset/units_check.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>

#include "core/base/error.hpp"
#include "core/base/hash.hpp"
#include "io/import/clip_shard.hpp"
#include "io/import/label_checks.hpp"
#include "io/import/shard_stage.hpp"
#include "io/util/dir_lock.hpp"
#include "io/util/file_util.hpp"
#include "io/util/temp_files.hpp"

namespace lockstep::io {
namespace {

// A ShardWriter with a buffer, so the pass appends in large slices. A shard stored in
// another order than the pass meets its samples goes through a StagedShard first; a frame
// table (video clips) goes through a ClipShard instead.
struct BufferedWriter {
  std::unique_ptr<ShardWriter> writer;
  std::unique_ptr<StagedShard> stage;  // null: the shard is stored in pass (source) order
  std::unique_ptr<ClipShard> clips;    // frame tables
  std::string split;
  bool train_stats = false;  // its samples feed the dataset statistics
  std::vector<unsigned char> samples;
  std::vector<int64_t> records;  // record_width() per sample
  int64_t n = 0;
  size_t flush_at = 0;
  void flush() {
    if (n == 0) return;
    if (stage)
      stage->append(samples.data(), records.data(), n);
    else
      writer->append(samples.data(), records.data(), n);
    samples.clear();
    records.clear();
    n = 0;
  }
};

// The pass meets a shard's samples in ascending source order; ORDER is the order the shard
// stores them in. Returns the stored position of each sample in pass order, or an empty
// vector when the two orders are the same.
std::vector<int64_t> stored_positions(const std::vector<int64_t>& order) {
  if (std::is_sorted(order.begin(), order.end())) return {};
  std::vector<std::pair<int64_t, int64_t>> by_source;  // (source index, stored position)
  by_source.reserve(order.size());
  for (size_t p = 0; p < order.size(); ++p) by_source.emplace_back(order[p], static_cast<int64_t>(p));
  std::sort(by_source.begin(), by_source.end());
  std::vector<int64_t> position;
  position.reserve(order.size());
  for (const auto& sp : by_source) position.push_back(sp.second);
  return position;
}

class Progress {
 public:
  Progress(bool on, std::string what, int64_t total) : on_(on), what_(std::move(what)), total_(total) {}
  void update(int64_t done) {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    if (done < total_ && now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    std::fprintf(stderr, "\r[shard] %-6s %10lld/%lld samples %5.1f%% %8.0f samples/s", what_.c_str(),
                 static_cast<long long>(done), static_cast<long long>(total_),
                 total_ ? 100.0 * static_cast<double>(done) / static_cast<double>(total_) : 100.0,
                 secs > 0 ? static_cast<double>(done) / secs : 0.0);
    if (done >= total_) std::fputc('\n', stderr);
    std::fflush(stderr);
  }

 private:
  bool on_;
  std::string what_;
  int64_t total_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
};

// NaN or Inf in floating-point input: refused where it is read, naming the input file and
// the sample (the shard writer's own check could only name the output shard). CSV, .ts and
// UCI-HAR text already refuse it at parse time with the line.
void require_finite(const DatasetSpec& spec, const unsigned char* samples, int64_t n, int64_t first,
                    const std::string& input) {
  float v = 0;
  const int64_t bad = first_nonfinite_sample(spec, samples, n, &v);
  if (bad >= 0)
    throw Error(input + ": sample " + std::to_string(first + bad) + " (0-based, in the input's order) contains NaN or "
                "Inf (here: " + (std::isnan(v) ? "NaN" : "Inf") + "): clean the input first (lockstep does not train "
                "on non-finite values)");
}

// FNV-1a 64 of the fingerprint text: the manifest stores a short ASCII token, whatever
// bytes the paths in it are made of.
std::string fingerprint_hash(const std::string& text) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(fnv1a64(text)));
  return buf;
}

std::string new_dataset_id() {
  std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                     static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// "train-00003-of-00016.h5": a file name a lockstep import writes.
bool is_shard_name(const std::string& f) {
  const size_t n = f.size();
  // NAME "-" 5 digits "-of-" 5 digits ".h5"
  return n > 18 && f.compare(n - 3, 3, ".h5") == 0 && f.compare(n - 12, 4, "-of-") == 0 && f[n - 18] == '-' &&
         f.find_first_not_of("0123456789", n - 17) == n - 12 && f.find_first_not_of("0123456789", n - 8) == n - 3;
}

// Step 4 of the protocol: what the import may overwrite. Throws UsageError.
void check_output(const ImportOptions& opt, const std::string& source) {
  const std::string& out = opt.output_dir;
  const std::string hint = " (choose another --output, or pass --force)";
  for (const std::string& in : opt.input_files) {
    const bool inside = path_is_inside(in, out);
    if (inside && (is_shard_name(base_name(canonical_path(in))) || base_name(canonical_path(in)) == kManifestName))
      throw UsageError("--input " + in + " lies in --output " + out +
                       " and this import would overwrite or delete it: write the shards to another directory");
    if (!opt.force && (inside || (is_directory(in) && path_is_inside(out, in))))
      throw UsageError("--output " + out + " and the input " + in + " overlap" + hint);
  }
  if (opt.force || !is_directory(out)) return;
  if (path_exists(out + "/" + kManifestName)) {
    std::string other;
    try {
      const Manifest m = read_manifest(out);
      if (m.source != source) other = "dataset '" + m.spec.name + "' made from " + m.source;
      // The same input under another name (--name left out): runs on the old dataset could no
      // longer resume (a run continues on its own data, by name) after a silent replacement.
      else if (m.spec.name != opt.name)
        other = "dataset '" + m.spec.name + "' (this import would name it '" + opt.name + "': --name " + m.spec.name +
                " re-imports it under its name)";
    } catch (const Error& e) {
      other = "an unreadable manifest (" + std::string(e.what()) + ")";
    }
    if (!other.empty())
      throw UsageError(out + " holds " + other + "; `lockstep shard` does not replace another dataset" + hint);
  }
  const auto foreign = foreign_entries(out, [](const std::string& f) { return f == kManifestName || is_shard_name(f); });
  if (!foreign.empty())
    throw UsageError(out + " is not empty and holds files that are not a lockstep dataset (" + entries_text(foreign) +
                     ")" + hint);
}

bool up_to_date(const std::string& dir, const std::string& fp) {
  if (!path_exists(dir + "/" + kManifestName)) return false;
  try {
    const Manifest m = read_manifest(dir);
    if (m.source_fingerprint != fp) return false;
    for (const auto& [name, split] : m.splits)
      for (const auto& s : split.shards)
        if (!path_exists(dir + "/" + s.file)) return false;
    return true;
  } catch (const Error&) {
    return false;  // unreadable manifest: redo the import
  }
}

// Writes one input split (and its validation split) in one pass over its source, under
// temp names; the finished writers go to DONE, to be committed with the whole import.
std::vector<std::pair<std::string, SplitEntry>> write_input(InputSplit& in, DatasetSpec& spec, bool first,
                                                            const ImportOptions& opt, const WriteOptions& wopt,
                                                            std::vector<std::unique_ptr<ShardWriter>>* done) {
  PlanOptions plan = opt.plan;
  if (!in.with_val) plan.val_fraction = 0.0;
  // Frame tables: a shard's clips share frames only with their neighbours, so shards take
  // runs of consecutive clips (~16 clips' frames each: a run's edge frames are stored twice).
  plan.source_runs = spec.frame_table ? 16 * spec.clip_length() : 0;
  const auto assignments = plan_import(in.source->labels(), std::max<int64_t>(1, spec.num_classes), in.split, plan,
                                       in.source->groups(), in.source->name());

  std::vector<BufferedWriter> writers;
  // Per source sample: the index of the writer it goes to, -1 when it is not imported.
  std::vector<int32_t> writer_of(static_cast<size_t>(in.source->count()), -1);
  const size_t sb = spec.sample_bytes();
  for (const auto& a : assignments) {
    const int count = static_cast<int>(a.shards.size());
    for (int k = 0; k < count; ++k) {
      BufferedWriter w;
      w.writer = std::make_unique<ShardWriter>(opt.output_dir, a.split, k, count, spec,
                                               static_cast<int64_t>(a.shards[k].size()), wopt);
      std::vector<int64_t> position = stored_positions(a.shards[k]);
      if (spec.frame_table)
        w.clips = std::make_unique<ClipShard>(spec, *w.writer, std::move(position));
      else if (!position.empty())
        w.stage = std::make_unique<StagedShard>(temp_name_for(w.writer->final_path() + ".stage"), sb,
                                                spec.record_width(), std::move(position), opt.reorder_window_bytes);
      w.split = a.split;
      w.train_stats = first && a.split == in.split;
      w.flush_at = std::max<size_t>(1, (1u << 20) / sb);
      for (const int64_t i : a.shards[k]) writer_of[static_cast<size_t>(i)] = static_cast<int32_t>(writers.size());
      writers.push_back(std::move(w));
    }
  }

  ChannelStats stats(spec), input_stats(spec);  // the training input's; a later input's own
  const int64_t n = in.source->count();
  const int64_t block = std::max<int64_t>(1, (16 << 20) / static_cast<int64_t>(sb));
  std::vector<unsigned char> buf(static_cast<size_t>(block) * sb);
  const auto& labels = in.source->labels();
  const auto& extras = in.source->extras();
  const int64_t extra_w = spec.record_width() - 1;
  LOCKSTEP_REQUIRE(extras.size() == static_cast<size_t>(n * extra_w),
                   in.source->name() + ": the source's label records do not match its sample count");
  Progress progress(opt.progress, in.split, n);
  for (int64_t b = 0; b < n; b += block) {
    const int64_t k = std::min(block, n - b);
    in.source->read(b, k, buf.data());
    require_finite(spec, buf.data(), k, b, in.source->name());
    for (int64_t j = 0; j < k; ++j) {
      const int32_t w = writer_of[static_cast<size_t>(b + j)];
      if (w < 0) continue;
      BufferedWriter& bw = writers[static_cast<size_t>(w)];
      const unsigned char* sample = buf.data() + static_cast<size_t>(j) * sb;
      const size_t at = bw.records.size();
      bw.records.push_back(spec.labeled ? labels[static_cast<size_t>(b + j)] : -1);
      const auto* extra = extras.data() + (b + j) * extra_w;
      bw.records.insert(bw.records.end(), extra, extra + extra_w);
      if (bw.train_stats) stats.add(sample, 1, spec.ragged ? extra[0] : 0);
      if (!first) input_stats.add(sample, 1, spec.ragged ? extra[0] : 0);
      if (bw.clips) {
        bw.clips->add(sample, bw.records.data() + at);
        bw.records.clear();
        continue;
      }
      bw.samples.insert(bw.samples.end(), sample, sample + sb);
      ++bw.n;
      if (static_cast<size_t>(bw.n) >= bw.flush_at) bw.flush();
    }
    progress.update(b + k);
  }
  if (first) {
    stats.finish(&spec.mean, &spec.std);
    // The reader refuses such statistics (a nanosecond timestamp column's mean 1.7e18): shard
    // exited 0 with a dataset train and inspect then refused (a hostile finding).
    if (const std::string why = normalisation_problem(spec.mean, spec.std, spec.sample_shape[0]); !why.empty())
      throw UsageError(in.source->name() + ": its samples' " + why + " (nothing was written: drop or rescale that " +
                       "channel, e.g. a timestamp column: --ignore-columns)");
  }
  if (!first) {
    // A test input in other units than the training input (0-1 floats beside 0-255 pixels)
    // was imported, and scored at chance with the training statistics (a hostile finding).
    std::vector<double> mean, std;
    input_stats.finish(&mean, &std);
    const std::string units = units_mismatch(spec.mean, spec.std, mean, std, in.source->name() + ": its samples",
                                             "the training input's (" + spec.name + ")");
    if (!units.empty() && !opt.any_units)
      throw UsageError(units + ": samples in other units, which the training statistics would normalise wrong "
                       "(nothing was written; convert it to the training input's units, or --any-units: they are "
                       "the same units)");
  }

  std::vector<std::pair<std::string, SplitEntry>> out;
  for (auto& w : writers) {
    w.flush();
    if (w.stage) w.stage->drain(*w.writer);
    if (w.clips) w.clips->drain();
    w.stage.reset();
    w.clips.reset();
    w.writer->set_stats(spec.mean, spec.std);
    if (out.empty() || out.back().first != w.split) out.emplace_back(w.split, SplitEntry{});
    out.back().second.shards.push_back(w.writer->finish());
    done->push_back(std::move(w.writer));
  }
  return out;
}

void write_and_commit(std::vector<InputSplit>& inputs, const ImportOptions& opt, Manifest& m, const Writer& released);

}  // namespace

std::string file_fingerprint(const std::vector<std::string>& paths, bool legacy) {
  // Size and whole-second mtime took an input rewritten within the second it was imported
  // (a script that regenerates and re-imports) as "up to date", keeping the old shards (a
  // hostile finding). Now: nanosecond mtime and the contents of the first 64 MiB of inputs
  // (each up to 16 MiB): a coarse-clocked file system's rewrite is caught by its bytes where
  // the inputs are small, as most tabular ones are. (Not the inode or ctime: `cp -a`, rsync
  // and chmod would import again.)
  constexpr int64_t kFileBytes = int64_t{16} << 20;
  int64_t budget = int64_t{64} << 20;
  std::string fp, bytes;
  for (const std::string& f : paths) {
    struct stat st {};
    ::stat(f.c_str(), &st);
    if (legacy) {
      fp += "|" + f + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtime);
      continue;
    }
    fp += fmt::format("|{}:{}:{}.{:09d}", f, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    if (S_ISREG(st.st_mode) && st.st_size <= kFileBytes && st.st_size <= budget) {
      budget -= st.st_size;
      std::FILE* in = std::fopen(f.c_str(), "rb");
      if (!in) continue;  // unreadable: the import names it
      bytes.resize(static_cast<size_t>(st.st_size));
      const size_t got = std::fread(bytes.data(), 1, bytes.size(), in);
      std::fclose(in);
      fp += fmt::format(":{:016x}", fnv1a64(std::string_view(bytes.data(), got)));
    }
  }
  return fp;
}

ImportResult run_import(std::vector<InputSplit> inputs, const ImportOptions& opt, const std::string& source,
                        const std::string& fingerprint, const std::string& legacy_fingerprint) {
  ImportResult result;
  const std::string fp_hash = fingerprint_hash(fingerprint);
  if (!opt.force && (up_to_date(opt.output_dir, fp_hash) ||
                     (!legacy_fingerprint.empty() && up_to_date(opt.output_dir, fingerprint_hash(legacy_fingerprint))))) {
    // Temp files of an import killed over this dataset (a --force re-import): nothing else
    // would ever remove them here. Only those whose writer is gone (temp_files.hpp), and only
    // under the directory's lock: a live import on a host of the same name (containers), whose
    // pid is no process here, lost its temp files to this sweep (a hostile finding).
    try {
      DirLock lock(opt.output_dir, "dataset", "--output", [](const std::string&) { return true; });
      remove_dead_temps(opt.output_dir, lock.previous());
    } catch (const Error&) {  // in use (its import's files are its own), or not ours to lock (read-only)
    }
    result.manifest = read_manifest(opt.output_dir);
    result.skipped = true;
    return result;
  }
  LOCKSTEP_REQUIRE(!inputs.empty(), "nothing to import");
  Manifest& m = result.manifest;
  m.source = source;
  m.source_fingerprint = fp_hash;
  m.dataset_id = new_dataset_id();
  m.sample_order = opt.plan.shuffle ? SampleOrder::kShuffled : SampleOrder::kSource;
  m.order_seed = opt.plan.seed;
  for (const auto& in : inputs) m.skipped_inputs += in.source->skipped();
  DatasetSpec& spec = m.spec;
  spec = inputs[0].source->spec();
  spec.name = opt.name;
  LOCKSTEP_REQUIRE(spec.labeled || opt.class_names.empty(), "--class-names given for unlabeled data");
  for (size_t i = 0; i < opt.class_names.size(); ++i) {
    LOCKSTEP_REQUIRE(!opt.class_names[i].empty(), "--class-names: name " + std::to_string(i + 1) + " is empty");
    for (size_t j = 0; j < i; ++j)
      LOCKSTEP_REQUIRE(opt.class_names[i] != opt.class_names[j],
                       "--class-names names '" + opt.class_names[i] + "' twice");
  }
  if (!opt.class_names.empty()) {
    LOCKSTEP_REQUIRE(spec.class_names.empty() || spec.class_names.size() == opt.class_names.size(),
                     "--class-names gives " + std::to_string(opt.class_names.size()) + " names for " +
                         std::to_string(spec.class_names.size()) + " classes in the input");
    spec.class_names = opt.class_names;
    spec.num_classes = std::max<int64_t>(spec.num_classes, static_cast<int64_t>(opt.class_names.size()));
  }
  for (const auto& in : inputs) {
    const DatasetSpec& s = in.source->spec();
    LOCKSTEP_REQUIRE(s.sample_shape == spec.sample_shape && s.dtype == spec.dtype && s.labeled == spec.labeled &&
                         s.ragged == spec.ragged && s.max_target_length == spec.max_target_length &&
                         s.tokens == spec.tokens,
                     in.source->name() + ": samples differ in shape, dtype or targets from " + inputs[0].source->name());
    spec.num_classes = std::max(spec.num_classes, s.num_classes);
  }
  if (!opt.class_names.empty())
    LOCKSTEP_REQUIRE(static_cast<int64_t>(opt.class_names.size()) == spec.num_classes,
                     "--class-names gives " + std::to_string(opt.class_names.size()) + " names, the labels need " +
                         std::to_string(spec.num_classes));
  check_labels(inputs, spec);
  // Never write a dataset lockstep's own reader refuses (a zero-length dimension, too many
  // classes or dimensions): refused here, before anything is written.
  if (const std::string why = spec_problem(spec); !why.empty())
    throw UsageError(inputs[0].source->name() + ": the dataset would have " + why +
                     ", which lockstep cannot train on (nothing was written)");

  // One import per directory at a time; a directory lockstep did not mark is adopted only
  // when it holds a dataset (from before datasets were marked) or with --force.
  const bool made_dir = !is_directory(opt.output_dir);
  DirLock lock(opt.output_dir, "dataset", "--output",
               [&](const std::string& f) { return opt.force || f == kManifestName || is_shard_name(f); },
               ", or pass --force");
  try {
    check_output(opt, source);
    write_and_commit(inputs, opt, m, lock.previous());
  } catch (...) {
    // An output directory this import created holds nothing of value: do not leave it.
    if (made_dir && list_dir(opt.output_dir) == std::vector<std::string>{kLockName}) {
      remove_file(opt.output_dir + "/" + kLockName);
      ::rmdir(opt.output_dir.c_str());
    }
    throw;
  }
  return result;
}

namespace {

// Steps 2, 3 and 5 of the protocol into the checked output directory.
void write_and_commit(std::vector<InputSplit>& inputs, const ImportOptions& opt, Manifest& m, const Writer& released) {
  DatasetSpec& spec = m.spec;
  LOCKSTEP_REQUIRE(::access(opt.output_dir.c_str(), W_OK) == 0, "output directory " + opt.output_dir + " is not writable");
  remove_dead_temps(opt.output_dir, released);
  // The shards the dataset being replaced lists: all of them are replaced (with --force,
  // another dataset's other splits too), not only those of the splits written now.
  std::vector<std::string> replaced;
  try {
    if (path_exists(opt.output_dir + "/" + kManifestName))
      for (const auto& [name, split] : read_manifest(opt.output_dir).splits)
        for (const auto& s : split.shards) replaced.push_back(s.file);
  } catch (const Error&) {
    // unreadable: only the shard names of the splits written now are replaced
  }
  WriteOptions wopt = opt.write;
  wopt.dataset_id = m.dataset_id;
  std::vector<std::unique_ptr<ShardWriter>> done;
  for (size_t i = 0; i < inputs.size(); ++i)
    for (auto& split : write_input(inputs[i], spec, i == 0, opt, wopt, &done)) m.splits.push_back(std::move(split));
  // Commit: every shard is complete and synced under its temp name.
  remove_file(opt.output_dir + "/" + kManifestName);
  for (auto& w : done) w->commit();
  fsync_path(opt.output_dir);
  write_manifest(opt.output_dir, m);

  for (const std::string& f : list_dir(opt.output_dir)) {
    if (!is_shard_name(f)) continue;
    bool listed = false, ours = std::find(replaced.begin(), replaced.end(), f) != replaced.end();
    for (const auto& [name, split] : m.splits) {
      ours = ours || f.compare(0, name.size() + 1, name + "-") == 0;
      for (const auto& s : split.shards) listed = listed || s.file == f;
    }
    if (ours && !listed) remove_file(opt.output_dir + "/" + f);
  }
}

}  // namespace

}  // namespace lockstep::io
