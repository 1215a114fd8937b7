// cmd_inspect: `lockstep inspect PATH [--verify]` for a dataset directory, a shard file
// or a checkpoint. Serial, no MPI, no LibTorch needed for what it reads.
#include <fmt/format.h>

#include <cstdio>
#include <functional>
#include <iostream>

#include "app/commands.hpp"
#include "core/base/error.hpp"
#include "io/records/checkpoint_store.hpp"
#include "io/util/file_util.hpp"
#include "io/util/json_io.hpp"
#include "io/dataset/shard_format.hpp"
#include "io/dataset/shard_reader.hpp"

namespace lockstep::app {
namespace {

std::string list(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "x" : "") + std::to_string(v[i]);
  return s;
}

std::string list(const std::vector<double>& v) {
  std::string s;
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.4g", i ? ", " : "", v[i]);
    s += buf;
  }
  return s;
}

void print_spec(const io::DatasetSpec& s) {
  std::cout << "dataset      " << s.name << "\n"
            << "samples      " << list(s.sample_shape) << " " << io::dtype_name(s.dtype)
            << (s.ragged ? " (ragged: the last axis is time, each sample's length stored, padded to " +
                               std::to_string(s.time_steps()) + ")"
                         : "")
            << "\n";
  if (s.sequence_targets()) {
    std::cout << "targets      token sequences (CTC), up to " << s.max_target_length << " of " << s.tokens.size()
              << " tokens:";
    for (const std::string& t : s.tokens) std::cout << " '" << t << "'";
    std::cout << "\n";
  }
  std::cout << "classes      "
            << (s.labeled ? std::to_string(s.num_classes)
                : s.sequence_targets() ? "none (token-sequence targets)" : "none (unlabeled data)");
  for (size_t i = 0; i < s.class_names.size(); ++i) std::cout << (i ? ", " : ": ") << s.class_names[i];
  std::cout << "\nmean / std   " << list(s.mean) << " / " << list(s.std) << "\n";
}

void inspect_dataset(const std::string& dir, bool verify) {
  const io::Manifest m = io::read_manifest(dir);
  print_spec(m.spec);
  std::cout << "source       " << m.source << "\n";
  if (m.spec.frame_table) {
    int64_t frames = 0, clips = 0;
    for (const auto& [name, split] : m.splits) {
      clips += split.count();
      for (const auto& s : split.shards) frames += s.frames;
    }
    std::cout << "frames       " << frames << " stored once for " << clips << " clips (" << clips * m.spec.clip_length()
              << " clip frames; shard format v3 frame tables)\n";
  }
  for (const auto& [name, split] : m.splits) {
    const std::vector<int64_t> hist = split.histogram(m.spec.labeled ? m.spec.num_classes : 0);
    std::cout << "split " << name << ": " << split.count() << " samples in " << split.shards.size() << " shard(s)";
    if (m.spec.labeled) std::cout << "; class histogram";
    for (const int64_t h : hist) std::cout << " " << h;
    std::cout << "\n";
  }
  if (!verify) return;
  for (const std::string& line : io::verify_dataset(dir)) std::cout << line << "\n";
  std::cout << "verified: every shard matches the manifest\n";
}

void inspect_shard(const std::string& path, bool verify) {
  const io::ShardHeader h = io::read_shard_header(path);
  print_spec(h.spec);
  std::cout << "split        " << h.split << " (shard " << h.index << " of " << h.count_of << ")\n"
            << "count        " << h.samples << (h.spec.frame_table ? " clips of " + std::to_string(h.frames) + " frames stored once" : "")
            << "\n"
            << "chunks       " << (h.chunk.empty() ? "contiguous" : list(h.chunk)) << ", filters " << h.filters << "\n";
  // With --verify, its bytes against the manifest beside it (a whole read: shards are large).
  if (!verify) {
    std::cout << "verified     no (--verify checks it against the manifest beside it)\n";
    return;
  }
  const std::string verified = io::verify_listed_shard(path);
  if (verified.empty())
    throw UsageError(path + ": --verify: no manifest.json beside it lists it (its checksum is in its dataset's "
                     "manifest)");
  std::cout << "verified     " << verified.substr(4) << ", as the manifest beside it lists it\n";
}

void inspect_checkpoint(const std::string& path) {
  const std::string meta = io::read_checkpoint_meta(path);  // verifies the checksum
  const io::Json t = io::parse_json(meta, path);
  std::cout << "checkpoint   " << path << " (" << io::file_size(path) << " bytes, checksum ok)\n";
  for (const auto& [key, value] : t.items()) {
    if (key == "config") continue;
    std::string v;
    if (value.is_string()) {
      v = value.get<std::string>();
    } else if (value.is_array()) {
      for (const auto& item : value) v += (v.empty() ? "" : ",") + io::dump_json(item);
    } else {
      v = io::dump_json(value);
    }
    fmt::print("{:<24} {}\n", key, v);
  }
  // The meta's epoch counts the epochs done (from 0); the rows and the log number epochs from 1.
  int64_t epoch = 0, done = 0;
  if (t.contains("epoch") && io::json_integer(t["epoch"], &epoch) && t.contains("samples_done_in_epoch") &&
      io::json_integer(t["samples_done_in_epoch"], &done))
    fmt::print("{:<24} {} epoch(s) done, {} samples into epoch {} (as the rows and the log number it)\n", "position",
               epoch, done, epoch + 1);
}

}  // namespace

int cmd_inspect(const Args& args) {
  std::string path;
  bool verify = false;
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << "usage: lockstep inspect PATH [--verify]\n"
                   "  PATH: a dataset directory (manifest.json), a shard (.h5) or a checkpoint (.ckpt)\n"
                   "  --verify: check every shard's checksum, shape, count and labels against the manifest\n"
                   "            (a shard: against the manifest beside it)\n";
      return kExitOk;
    }
    if (a == "--verify") {
      verify = true;
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("unknown option " + a + " (see lockstep inspect --help)");
    } else if (path.empty()) {
      path = a;
    } else {
      throw UsageError("lockstep inspect takes one PATH");
    }
  }
  if (path.empty()) throw UsageError("lockstep inspect needs a PATH (see --help)");
  const bool shard = path.size() > 3 && path.compare(path.size() - 3, 3, ".h5") == 0;
  if (verify && !io::is_directory(path) && !shard)
    throw UsageError("--verify checks a dataset, or a shard, against its manifest: lockstep inspect DIR --verify (" +
                     path + " is neither a dataset directory nor a shard)");
  // A run directory (metrics.jsonl, checkpoints/) is no dataset: name what inspect reads in it.
  if (io::is_directory(path) && !io::path_exists(path + "/manifest.json") &&
      (io::path_exists(path + "/metrics.jsonl") || io::is_directory(path + "/checkpoints"))) {
    const auto ckpts = io::is_directory(path + "/checkpoints") ? io::list_checkpoints(path + "/checkpoints")
                                                               : std::vector<std::pair<int64_t, std::string>>{};
    throw UsageError(path + " is a run directory, not a dataset: inspect one of its checkpoints (" +
                     (ckpts.empty() ? path + "/checkpoints/step-N.ckpt: none yet" : ckpts.back().second) +
                     "), or see the run with lockstep report " + path);
  }
  // A file that is not what its name says is bad input, exit 2, as evaluate and predict say
  // of it (inspect said 1 of a corrupt checkpoint).
  const auto as_usage = [](const std::function<void()>& read) {
    try {
      read();
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  };
  if (io::is_directory(path)) {
    inspect_dataset(path, verify);
  } else if (path.size() > 3 && path.compare(path.size() - 3, 3, ".h5") == 0) {
    as_usage([&] { inspect_shard(path, verify); });
  } else if (path.size() > 5 && path.compare(path.size() - 5, 5, ".ckpt") == 0) {
    as_usage([&] { inspect_checkpoint(path); });
  } else {
    throw UsageError(path + ": not a dataset directory, .h5 shard or .ckpt checkpoint");
  }
  return kExitOk;
}

}  // namespace lockstep::app
