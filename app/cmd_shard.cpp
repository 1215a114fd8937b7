// cmd_shard: `lockstep shard --input KIND:PATH --output DIR [options]` (a serial tool).
// KIND is idx (MNIST-family directory), csv (a file) or hdf5 (a file); all go through
// io/importer's one-pass pipeline.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "app/commands.hpp"
#include "core/error.hpp"
#include "io/csv_import.hpp"
#include "io/file_util.hpp"
#include "io/hdf5_import.hpp"
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

std::pair<std::string, std::string> kind_and_path(const std::string& spec, const char* option) {
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  if (colon == std::string::npos || (kind != "idx" && kind != "csv" && kind != "hdf5"))
    throw UsageError(std::string("--") + option + " must be idx:DIR, csv:FILE or hdf5:FILE, got '" + spec + "'");
  return {kind, spec.substr(colon + 1)};
}

}  // namespace

int cmd_shard(const Args& args) {
  io::ImportOptions opt;
  io::CsvOptions csv;
  std::string input, test_input, class_names, samples_ds, labels_ds, delimiter;
  po::options_description d(
      "usage: lockstep shard --input KIND:PATH --output DIR [options]\n"
      "  KIND:PATH  idx:DIR (MNIST-family IDX files, raw or .gz; t10k-* becomes 'test')\n"
      "             csv:FILE (numeric columns + a label column)\n"
      "             hdf5:FILE (one big file: --samples-dataset, --labels-dataset)\n\nOptions");
  d.add_options()
      ("help,h", "print this help and exit")
      ("input", po::value(&input)->required(), "source of the 'train' split")
      ("test-input", po::value(&test_input), "csv/hdf5 source of the 'test' split")
      ("output", po::value(&opt.output_dir)->required(), "dataset directory to write (shards + manifest.json)")
      ("shards", po::value(&opt.plan.shards)->default_value(opt.plan.shards), "shards per split")
      ("val-fraction", po::value(&opt.plan.val_fraction)->default_value(0.1),
       "stratified fraction of train moved to a 'val' split (training validates on it; 0: no val split)")
      ("name", po::value(&opt.name)->default_value(opt.name), "dataset name stored in the metadata")
      ("class-names", po::value(&class_names), "comma-separated class names (default: the labels' text, or 0..K-1)")
      ("limit", po::value(&opt.plan.limit)->default_value(0), "keep the first N samples of each input (after shuffling); 0: all")
      ("seed", po::value(&opt.plan.seed)->default_value(0), "seed of the pre-shard shuffle")
      ("no-shuffle", "keep the source order (no shuffle before sharding)")
      ("compression", po::value(&opt.write.compression)->default_value(0), "deflate level 0-9 (with shuffle filter)")
      ("chunk", po::value(&opt.write.chunk_samples)->default_value(0), "samples per HDF5 chunk; 0: about 1 MiB")
      ("label-column", po::value(&csv.label_column), "csv: label column name or 0-based index (default: last)")
      ("header", po::value(&csv.header)->default_value("auto"), "csv: auto | yes | no")
      ("delimiter", po::value(&delimiter)->default_value(","), "csv: field delimiter (one character)")
      ("window", po::value(&csv.window)->default_value(0), "csv: rows per time-series window (0: one sample per row)")
      ("stride", po::value(&csv.stride)->default_value(0), "csv: rows between window starts (0: = window)")
      ("samples-dataset", po::value(&samples_ds)->default_value("samples"), "hdf5: dataset of the samples")
      ("labels-dataset", po::value(&labels_ds)->default_value("labels"), "hdf5: dataset of the labels")
      ("force", "rewrite even when the output already matches the input, and write into a directory that "
                "holds another dataset or other files (never over an input file)");
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
  if (opt.plan.shards < 1) throw UsageError("--shards must be at least 1");
  if (opt.plan.limit < 0) throw UsageError("--limit must be >= 0");
  if (!(opt.plan.val_fraction >= 0 && opt.plan.val_fraction < 1)) throw UsageError("--val-fraction must be in [0, 1)");
  if (delimiter.size() != 1) throw UsageError("--delimiter must be one character");
  csv.delimiter = delimiter[0];
  const auto [kind, path] = kind_and_path(input, "input");
  opt.class_names = split_commas(class_names);
  opt.plan.shuffle = !vm.count("no-shuffle");
  opt.force = vm.count("force") > 0;
  opt.progress = ::isatty(STDERR_FILENO) != 0;

  std::vector<std::string> files;
  std::vector<io::InputSplit> inputs;
  if (kind == "idx") {
    if (!test_input.empty()) throw UsageError("--test-input is for csv/hdf5; idx takes t10k-* from the same directory");
    inputs = io::open_idx(path, &files);
  } else {
    std::vector<std::pair<std::string, std::string>> split_files{{"train", path}};
    if (!test_input.empty()) {
      const auto [tkind, tpath] = kind_and_path(test_input, "test-input");
      if (tkind != kind) throw UsageError("--test-input must be of the same kind as --input (" + kind + ")");
      split_files.emplace_back("test", tpath);
    }
    for (const auto& [split, file] : split_files) files.push_back(file);
    if (kind == "csv") {
      std::vector<std::string> names;
      inputs = io::open_csv(split_files, csv, &names);
      if (opt.class_names.empty()) opt.class_names = names;
    } else {
      for (const auto& [split, file] : split_files)
        inputs.push_back({split, io::open_hdf5_source(file, samples_ds, labels_ds), split == "train"});
    }
  }
  opt.input_files = files;
  if (kind == "idx") opt.input_files.push_back(path);
  std::ostringstream fp;
  fp << "lockstep-import-v1|" << kind << io::file_fingerprint(files) << "|shards=" << opt.plan.shards
     << "|val=" << opt.plan.val_fraction << "|limit=" << opt.plan.limit << "|shuffle=" << opt.plan.shuffle
     << "|seed=" << opt.plan.seed << "|deflate=" << opt.write.compression << "|chunk=" << opt.write.chunk_samples
     << "|name=" << opt.name << "|classes=" << class_names << "|csv=" << csv.label_column << "," << csv.header
     << "," << delimiter << "," << csv.window << "," << csv.stride << "|h5=" << samples_ds << "," << labels_ds;

  const auto t0 = std::chrono::steady_clock::now();
  const io::ImportResult r = io::run_import(std::move(inputs), opt, input, fp.str());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r.skipped) {
    std::cout << "shards in " << opt.output_dir << " are up to date with " << input << " (use --force to rewrite)\n";
    return kExitOk;
  }
  for (const auto& [name, split] : r.manifest.splits)
    std::printf("%-6s %10lld samples in %zu shard(s)\n", name.c_str(), static_cast<long long>(split.count()),
                split.shards.size());
  std::printf("wrote %s/%s in %.2f s\n", opt.output_dir.c_str(), io::kManifestName, secs);
  return kExitOk;
}

}  // namespace lockstep::app
