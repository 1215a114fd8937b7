// cmd_shard: `lockstep shard --input KIND:PATH --output DIR [options]` (a serial tool):
// parses the options into an io::ImportSpec, opens the inputs (io/import/import_spec) and
// runs io/import/importer's one-pass pipeline.
#include <unistd.h>

#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "app/commands.hpp"
#include "app/launch_checks.hpp"
#include "app/po_error.hpp"
#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "io/import/import_spec.hpp"

namespace po = boost::program_options;

namespace lockstep::app {

int cmd_shard(const Args& args) {
  io::ImportSpec spec;
  io::ImportOptions& opt = spec.options;
  io::CsvOptions& csv = spec.csv;
  std::string delimiter, frame_size, color, clip_edges, image_size, video_storage;
  io::VideoOptions& video = spec.video;
  po::options_description d(
      "usage: lockstep shard --input KIND:PATH --output DIR [options]\n"
      "  KIND:PATH  idx:DIR (MNIST-family IDX files, raw or .gz; t10k-* becomes 'test')\n"
      "             csv:FILE (numeric columns + a label column)\n"
      "             ts:FILE (UEA/UCR time-series classification .ts: samples [D, L], ragged when unequal)\n"
      "             ucihar:DIR (the UCI-HAR layout: train/, test/, Inertial Signals/, subjects as groups)\n"
      "             audio:FILE (a manifest of PATH<TAB>TRANSCRIPT[<TAB>SPEAKER] lines: WAV/FLAC, resampled to\n"
      "               16 kHz mono -> log-mel [40, T] ragged samples, character targets for CTC; speakers as groups)\n"
      "             librispeech:DIR (SPEAKER/CHAPTER/*.trans.txt + FLAC, read as audio: is)\n"
      "             video:FILE (a CSV of video,frame,label[,trial] rows: per-frame labels on mp4/mkv/avi\n"
      "               files -> uint8 clips [C, T, H, W] around each labelled frame; trials as groups;\n"
      "               --no-labels: video[,frame] rows; no frame column: every --clip-stride'th frame)\n"
      "             hdf5:FILE (one big file: --samples-dataset, --labels-dataset)\n"
      "             npy:X.npy[,Y.npy] (NumPy arrays: samples [N, ...], labels [N]; no Y: unlabelled)\n"
      "             npz:FILE[:X,Y] (arrays of an np.savez archive; keys default to --samples-dataset,\n"
      "               --labels-dataset)\n"
      "             images:DIR (JPEG/PNG class folders: DIR/CLASS/*, or DIR/{train,val,test}/CLASS/*\n"
      "               -> uint8 [C, H, W]; --image-size, --color, --skip-bad)\n\nOptions");
  d.add_options()
      ("help,h", "print this help and exit")
      ("input", po::value(&spec.input)->required(), "source of the 'train' split")
      ("test-input", po::value(&spec.test_input), "csv/ts/audio/video/hdf5/npy/npz source of the 'test' split")
      ("output", po::value(&opt.output_dir)->required(), "dataset directory to write (shards + manifest.json)")
      ("shards", po::value(&opt.plan.shards)->default_value(opt.plan.shards), "shards per split")
      ("val-fraction", po::value(&opt.plan.val_fraction)->default_value(0.1),
       "stratified fraction of train moved to a 'val' split (training validates on it; 0: no val split)")
      ("name", po::value(&opt.name)->default_value(opt.name), "dataset name stored in the metadata")
      ("class-names", po::value(&spec.class_names), "comma-separated class names (default: the labels' text, or 0..K-1)")
      ("limit", po::value(&opt.plan.limit)->default_value(0), "keep the first N samples of each input (after shuffling); 0: all")
      ("seed", po::value(&opt.plan.seed)->default_value(0), "seed of the pre-shard shuffle")
      ("no-shuffle", "keep the source order (no shuffle before sharding)")
      ("compression", po::value(&opt.write.compression)->default_value(0), "deflate level 0-9 (with shuffle filter)")
      ("chunk", po::value(&opt.write.chunk_samples)->default_value(0), "samples per HDF5 chunk; 0: about 1 MiB")
      ("label-column", po::value(&csv.label_column), "csv: label column name or 0-based index (default: last)")
      ("header", po::value(&csv.header)->default_value("auto"), "csv: auto | yes | no")
      ("delimiter", po::value(&delimiter)->default_value(","),
       "csv: field delimiter (one character), or 'space': runs of spaces/tabs (UCI-style text)")
      ("ignore-columns", po::value(&csv.ignore_columns),
       "csv: comma-separated column names or indices that are neither features nor labels (e.g. a timestamp)")
      ("window", po::value(&csv.window)->default_value(0), "csv: rows per time-series window (0: one sample per row)")
      ("stride", po::value(&csv.stride)->default_value(0), "csv: rows between window starts (0: = window)")
      ("window-labels", po::value(&csv.window_labels)->default_value("pure"),
       "csv: pure (windows never cross a label boundary) | majority (they may; labelled by the majority)")
      ("har-signals", po::value(&spec.har_signals)->default_value("inertial"),
       "ucihar: inertial (the nine raw signals, [9, 128]) | features (X_*.txt, [561])")
      ("group-column", po::value(&csv.group_column),
       "csv: column of group ids (subject, trial): windows never cross groups, --val-fraction takes whole groups; "
       "video: the trial column (default: 'trial' when present; 'none': no groups)")
      ("clip-frames", po::value(&video.clip_frames)->default_value(video.clip_frames),
       "video: frames per clip, centred on the labelled frame")
      ("clip-stride", po::value(&video.clip_stride)->default_value(video.clip_stride),
       "video: one clip every N labelled frames of each trial")
      ("clip-edges", po::value(&clip_edges)->default_value("pad"),
       "video: pad (repeat the first/last frame past a video's edges) | skip (drop those clips)")
      ("frame-size", po::value(&frame_size), "video: resize frames to HxW (default: the videos' own size)")
      ("video-storage", po::value(&video_storage)->default_value("frames"),
       "video: frames (each frame stored once per shard, clips as rows of frames: shard format v3) | clips "
       "(every clip whole: a frame up to --clip-frames times, format v1, for readers of /samples)")
      ("color", po::value(&color)->default_value("auto"),
       "video, images: gray (1 channel) | rgb (3) | auto (video: gray; images: the first image's)")
      ("decode-threads", po::value(&video.threads)->default_value(0), "video, images: decoding threads; 0: every core")
      ("image-size", po::value(&image_size), "images: HxW, each image resized (shorter side) and centre-cropped")
      ("no-labels", "video, audio, librispeech, csv: data without labels, to run `lockstep predict` on (video: no "
                    "label column, and without a frame column every frame of each video; audio: PATH lines); stored "
                    "in source order, no validation split")
      ("skip-bad", "images: skip files that do not decode (each named, counted in the manifest) instead of failing")
      ("sample-shape", po::value(&spec.sample_shape), "every sample seen as this shape, same elements (e.g. 1,28,28 for [N,28,28] images)")
      ("layout", po::value(&spec.layout), "npy, npz, hdf5: channels-last (samples [H,W,C] or [T,H,W,C], stored as "
                                           "[C,H,W] or [C,T,H,W]) | channels-first (as stored); without it a shape "
                                           "that looks channels-last is refused")
      ("samples-dataset", po::value(&spec.samples_dataset)->default_value("samples"), "hdf5: dataset of the samples; npz: array key")
      ("labels-dataset", po::value(&spec.labels_dataset)->default_value("labels"), "hdf5: dataset of the labels; npz: array key (none: unlabelled)")
      ("force", "rewrite even when the output already matches the input, and write into a directory that "
                "holds another dataset or other files (never over an input file)")
      ("any-units", "import a --test-input whose spread is 16x off the training input's in every channel "
                    "(other units: refused without it)");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(d).style(no_guessing_style()).run(), vm);
    if (vm.count("help")) {
      std::cout << d;
      return kExitOk;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(po_message(e) + " (see lockstep shard --help)");
  }
  require_single_process("shard");
  if (opt.plan.shards < 1) throw UsageError("--shards must be at least 1");
  if (opt.plan.limit < 0) throw UsageError("--limit must be >= 0");
  if (!(opt.plan.val_fraction >= 0 && opt.plan.val_fraction < 1)) throw UsageError("--val-fraction must be in [0, 1)");
  if (delimiter == "space") delimiter = " ";
  if (delimiter.size() != 1) throw UsageError("--delimiter must be one character or 'space', not '" + delimiter + "'");
  csv.delimiter = delimiter[0];
  if (!frame_size.empty()) io::parse_frame_size(frame_size, &video);
  if (color != "auto" && color != "gray" && color != "rgb")
    throw UsageError("--color must be auto, gray or rgb, not '" + color + "'");
  video.rgb = color == "rgb";
  spec.images.color = color;
  spec.images.threads = video.threads;
  spec.images.skip_bad = vm.count("skip-bad") > 0;
  if (!image_size.empty()) io::parse_image_size(image_size, &spec.images);
  if (clip_edges != "pad" && clip_edges != "skip")
    throw UsageError("--clip-edges must be pad or skip, not '" + clip_edges + "'");
  video.skip_edges = clip_edges == "skip";
  if (video_storage != "frames" && video_storage != "clips")
    throw UsageError("--video-storage must be frames or clips, not '" + video_storage + "'");
  video.frame_table = video_storage == "frames";
  opt.plan.shuffle = !vm.count("no-shuffle");
  spec.no_labels = vm.count("no-labels") > 0;
  spec.val_fraction_given = !vm["val-fraction"].defaulted();
  if (spec.no_labels && !spec.val_fraction_given) opt.plan.val_fraction = 0.0;
  opt.force = vm.count("force") > 0;
  opt.any_units = vm.count("any-units") > 0;
  opt.progress = ::isatty(STDERR_FILENO) != 0;
  io::OpenedImport opened = io::open_import(spec);

  const auto t0 = std::chrono::steady_clock::now();
  const io::ImportResult r = io::run_import(std::move(opened.inputs), opt, spec.input, opened.fingerprint,
                                                  opened.legacy_fingerprint);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r.skipped) {
    std::cout << "shards in " << opt.output_dir << " are up to date with " << spec.input << " (use --force to rewrite)\n";
    return kExitOk;
  }
  for (const auto& [name, split] : r.manifest.splits)
    fmt::print("{:<6} {:>10} samples in {} shard(s)\n", name, split.count(), split.shards.size());
  // What --val-fraction made: whole groups (trials, subjects, speakers) move together, so a
  // few large ones can leave validation far from the fraction asked for.
  if (opt.plan.val_fraction > 0 && r.manifest.has_split("val") && r.manifest.has_split("train")) {
    const int64_t in_val = r.manifest.split("val", opt.output_dir).count();
    const int64_t in_train = r.manifest.split("train", opt.output_dir).count();
    const double share = static_cast<double>(in_val) / static_cast<double>(std::max<int64_t>(1, in_val + in_train));
    fmt::print("val holds {:.1f}% of train + val (--val-fraction {:g})\n", 100.0 * share, opt.plan.val_fraction);
    if (std::abs(share - opt.plan.val_fraction) > 0.5 * opt.plan.val_fraction)
      log::warn(fmt::format("validation holds {:.1f}% of the samples, not the {:g}% asked for: whole groups move "
                            "together and these are few or uneven (more groups, another --seed or --val-fraction "
                            "moves it)", 100.0 * share, 100.0 * opt.plan.val_fraction));
  }
  fmt::print("wrote {}/{} in {:.2f} s\n", opt.output_dir, io::kManifestName, secs);
  return kExitOk;
}

}  // namespace lockstep::app
