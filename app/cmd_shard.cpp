// cmd_shard: `lockstep shard --input KIND:PATH --output DIR --shards N` (a serial tool).
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "app/commands.hpp"
#include "core/error.hpp"
#include "io/file_util.hpp"
#include "io/idx_import.hpp"

namespace po = boost::program_options;

namespace lockstep::app {
namespace {

// A launcher that started several copies would have them all write the same files.
void require_single_process() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_STEP_NUM_TASKS"}) {
    const char* v = std::getenv(var);
    if (v && std::atoi(v) > 1)
      throw UsageError(std::string("lockstep shard is a serial tool, but ") + var + "=" + v +
                       ": run it as one process (no mpirun/srun -n > 1)");
  }
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

}  // namespace

int cmd_shard(const Args& args) {
  io::ImportOptions opt;
  std::string input, class_names;
  po::options_description d("usage: lockstep shard --input idx:DIR --output DIR [options]\n\nOptions");
  d.add_options()
      ("help,h", "print this help and exit")
      ("input", po::value(&input)->required(), "source: idx:DIR (MNIST-family IDX files, raw or .gz)")
      ("output", po::value(&opt.output_dir)->required(), "dataset directory to write (shards + manifest.json)")
      ("shards", po::value(&opt.shards)->default_value(opt.shards), "shards per split")
      ("name", po::value(&opt.name)->default_value(opt.name), "dataset name stored in the metadata")
      ("class-names", po::value(&class_names), "comma-separated class names (default: 0..K-1)")
      ("limit", po::value(&opt.limit)->default_value(0), "keep the first N samples of each split (after shuffling); 0: all")
      ("seed", po::value(&opt.seed)->default_value(0), "seed of the pre-shard shuffle")
      ("no-shuffle", "keep the source order")
      ("compression", po::value(&opt.write.compression)->default_value(0), "deflate level 0-9 (with shuffle filter)")
      ("chunk", po::value(&opt.write.chunk_samples)->default_value(0), "samples per HDF5 chunk; 0: about 1 MiB")
      ("force", "rewrite even when the output already matches the input");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(d).run(), vm);
    if (vm.count("help")) {
      std::cout << d;
      return kExitOk;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(std::string(e.what()) + " (see lockstep shard --help)");
  }
  require_single_process();
  if (opt.shards < 1) throw UsageError("--shards must be at least 1");
  if (opt.limit < 0) throw UsageError("--limit must be >= 0");
  const auto colon = input.find(':');
  const std::string kind = input.substr(0, colon);
  if (colon == std::string::npos || kind != "idx")
    throw UsageError("--input must be idx:DIR, got '" + input + "'");
  opt.input_dir = input.substr(colon + 1);
  opt.class_names = split_commas(class_names);
  opt.shuffle = !vm.count("no-shuffle");
  opt.force = vm.count("force") > 0;

  const auto t0 = std::chrono::steady_clock::now();
  const io::ImportResult r = io::import_idx(opt);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r.skipped) {
    std::cout << "shards in " << opt.output_dir << " are up to date with " << input << " (use --force to rewrite)\n";
    return kExitOk;
  }
  for (const auto& [name, split] : r.manifest.splits) {
    std::printf("%-6s %8lld samples in %zu shard(s)\n", name.c_str(), static_cast<long long>(split.count()),
                split.shards.size());
  }
  std::printf("wrote %s/%s in %.2f s\n", opt.output_dir.c_str(), io::kManifestName, secs);
  return kExitOk;
}

}  // namespace lockstep::app
