// import_spec: see import_spec.hpp.
#include "io/import/import_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "core/base/error.hpp"
#include "io/import/audio_import.hpp"
#include "io/import/hdf5_import.hpp"
#include "io/import/idx_import.hpp"
#include "io/import/image_import.hpp"
#include "io/import/npy_import.hpp"
#include "io/import/ts_import.hpp"
#include "io/import/text_fields.hpp"
#include "io/import/ucihar_import.hpp"
#include "io/import/video_import.hpp"

namespace lockstep::io {
namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(trim(item));
  return out;
}

std::pair<std::string, std::string> kind_and_path(const std::string& spec, const char* option) {
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  if (colon == std::string::npos || (kind != "idx" && kind != "csv" && kind != "hdf5" && kind != "ts" &&
                                     kind != "ucihar" && kind != "audio" && kind != "video" && kind != "npy" &&
                                     kind != "npz" && kind != "images" &&
                                     kind != "librispeech"))
    throw UsageError(fmt::format("--{} must be idx:DIR, csv:FILE, ts:FILE, ucihar:DIR, audio:MANIFEST, video:LABELS.csv, "
                                 "hdf5:FILE, npy:X.npy[,Y.npy], npz:FILE[:X,Y], images:DIR or librispeech:DIR, got '{}'",
                                 option, spec));
  return {kind, spec.substr(colon + 1)};
}

// Every option value of an import, whatever the input's kind, checked before anything is
// opened: a value outside its choices or range is the user's to fix (UsageError, exit 2).
void check_options(const ImportSpec& spec) {
  const auto choice = [](const char* option, const std::string& value, std::initializer_list<const char*> allowed) {
    std::string list;
    for (const char* a : allowed) {
      if (value == a) return;
      list += (list.empty() ? "" : " | ") + std::string(a);
    }
    throw UsageError(fmt::format("--{} must be {}, not '{}'", option, list, value));
  };
  const auto range = [](const char* option, int64_t value, int64_t lo, int64_t hi) {
    if (value < lo || value > hi) throw UsageError(fmt::format("--{} must be in [{}, {}], not {}", option, lo, hi, value));
  };
  choice("header", spec.csv.header, {"auto", "yes", "no"});
  choice("window-labels", spec.csv.window_labels, {"pure", "majority"});
  choice("har-signals", spec.har_signals, {"inertial", "features"});
  range("window", spec.csv.window, 0, int64_t{1} << 30);
  range("stride", spec.csv.stride, 0, int64_t{1} << 30);
  range("compression", spec.options.write.compression, 0, 9);
  range("chunk", spec.options.write.chunk_samples, 0, int64_t{1} << 30);
  range("clip-frames", spec.video.clip_frames, 1, 4096);
  range("clip-stride", spec.video.clip_stride, 1, int64_t{1} << 30);
  range("decode-threads", spec.video.threads, 0, 4096);
}

// "1,28,28" (or "1x28x28") into dimensions; throws UsageError naming --sample-shape.
std::vector<int64_t> parse_sample_shape(const std::string& text) {
  std::vector<int64_t> dims;
  std::string item;
  std::stringstream ss(text);
  while (std::getline(ss, item, text.find('x') != std::string::npos ? 'x' : ',')) {
    item = trim(item);
    if (item.empty() || item.size() > 9 || item.find_first_not_of("0123456789") != std::string::npos ||
        std::stoll(item) == 0)
      throw UsageError("--sample-shape must be positive sizes such as 1,28,28, not '" + text + "'");
    dims.push_back(std::stoll(item));
  }
  if (dims.empty() || dims.size() > 8) throw UsageError("--sample-shape must have 1 to 8 sizes, not '" + text + "'");
  return dims;
}

}  // namespace

namespace {

// "HxW" into *H and *W; throws UsageError naming OPTION.
void parse_size(const std::string& text, const char* option, const char* example, int* height, int* width) {
  const auto x = text.find('x');
  const std::string h = text.substr(0, x), w = x == std::string::npos ? "" : text.substr(x + 1);
  auto ok = [](const std::string& s) {
    return !s.empty() && s.size() < 6 && s.find_first_not_of("0123456789") == std::string::npos && std::stoi(s) > 0;
  };
  if (!ok(h) || !ok(w)) throw UsageError(fmt::format("--{} must be HxW (e.g. {}), not '{}'", option, example, text));
  *height = std::stoi(h);
  *width = std::stoi(w);
}

}  // namespace

void parse_frame_size(const std::string& text, VideoOptions* opt) {
  parse_size(text, "frame-size", "112x112", &opt->height, &opt->width);
}

void parse_image_size(const std::string& text, ImageOptions* opt) {
  parse_size(text, "image-size", "224x224", &opt->height, &opt->width);
}

namespace {

UsageError unlabelled_val(const ImportSpec& spec) {
  return UsageError("--val-fraction: " + spec.input + " is unlabelled, so it has no validation split; leave it out or "
                    "pass 0");
}

}  // namespace

OpenedImport open_import(ImportSpec& spec) {
  check_options(spec);
  ImportOptions& opt = spec.options;
  const auto [kind, path] = kind_and_path(spec.input, "input");
  opt.class_names = split_commas(spec.class_names);
  if (kind == "video" && spec.video.frame_table && !spec.sample_shape.empty())
    throw UsageError("--sample-shape on video: clips stored as frames (--video-storage frames) keep their "
                     "[C,T,H,W] shape; pass --video-storage clips to reshape them");
  const bool arrays = kind == "npy" || kind == "npz" || kind == "hdf5";
  if (!spec.layout.empty() && spec.layout != "channels-first" && spec.layout != "channels-last")
    throw UsageError("--layout must be channels-first or channels-last, not '" + spec.layout + "'");
  if (!spec.layout.empty() && !arrays)
    throw UsageError("--layout is for npy:, npz: and hdf5: arrays (" + kind + ": is stored channels-first)");
  if (spec.no_labels) {
    if (kind != "video" && kind != "audio" && kind != "librispeech" && kind != "csv")
      throw UsageError("--no-labels is for video:, audio:, librispeech: and csv: inputs (npy: leave out the labels "
                       "file; hdf5/npz: --labels-dataset none)");
    if (kind == "csv" && !spec.csv.label_column.empty() && spec.csv.label_column != "none")
      throw UsageError("--no-labels and --label-column " + spec.csv.label_column + " contradict each other");
    if (opt.plan.val_fraction > 0) throw unlabelled_val(spec);  // before any input is opened
    if (!spec.class_names.empty()) throw UsageError("--class-names given with --no-labels (the model's classes are used)");
    spec.csv.label_column = "none";  // source order, no val split: below, as for any unlabelled input
  }
  std::vector<std::string> files, names;  // NAMES: the class names the input carries, if any
  std::string listing;                    // images: a fingerprint of every file
  OpenedImport out;
  if (kind == "idx") {
    if (!spec.test_input.empty())
      throw UsageError("--test-input is for csv/ts/audio/video/hdf5/npy/npz; idx takes t10k-* from the same directory");
    out.inputs = open_idx(path, &files);
  } else if (kind == "images") {
    if (!spec.test_input.empty())
      throw UsageError("--test-input is for csv/ts/audio/video/hdf5/npy/npz; images takes DIR/test (DIR/train, DIR/val)");
    out.inputs = open_images(path, spec.images, opt.class_names, &names, &listing);
  } else if (kind == "ucihar") {
    if (!spec.test_input.empty()) throw UsageError("--test-input is for csv/ts/audio/video/hdf5/npy/npz; ucihar takes DIR/test");
    out.inputs = open_ucihar(path, spec.har_signals, &names, &files);
  } else {
    std::vector<std::pair<std::string, std::string>> split_files{{"train", path}};
    if (!spec.test_input.empty()) {
      const auto [tkind, tpath] = kind_and_path(spec.test_input, "test-input");
      if (tkind != kind) throw UsageError("--test-input must be of the same kind as --input (" + kind + ")");
      split_files.emplace_back("test", tpath);
    }
    const bool numpy = kind == "npy" || kind == "npz";
    if (!numpy)  // npy/npz paths may carry keys or a second file: open_npy names the files
      for (const auto& [split, file] : split_files) files.push_back(file);
    if (numpy) {
      out.inputs = open_npy(split_files, kind == "npz", {spec.samples_dataset, spec.labels_dataset}, &files);
    } else if (kind == "csv") {
      out.inputs = open_csv(split_files, spec.csv, &names);
    } else if (kind == "ts") {
      out.inputs = open_ts(split_files, &names);
    } else if (kind == "video") {
      VideoOptions video = spec.video;
      video.group_column = spec.csv.group_column;
      video.labeled = !spec.no_labels;
#ifdef LOCKSTEP_WITH_VIDEO
      out.inputs = open_video(split_files, video, opt.class_names, &names, &files);  // the videos are inputs too
#else
      (void)video;
      throw UsageError("--input " + spec.input + ": this lockstep was built without video support "
                       "(cmake -DLOCKSTEP_WITH_VIDEO=OFF, as the GPU bundle is): import videos with a full build "
                       "and copy the dataset");
#endif
    } else if (kind == "audio") {
      out.inputs = open_audio(split_files, false, !spec.no_labels, &files);  // the WAVs are inputs too: a changed one re-imports
    } else if (kind == "librispeech") {
      out.inputs = open_audio(split_files, true, !spec.no_labels, &files);
    } else {
      for (const auto& [split, file] : split_files)
        out.inputs.push_back(
            {split, open_hdf5_source(file, spec.samples_dataset, spec.labels_dataset), split == "train"});
    }
  }
  // Unlabelled input however it was said (--no-labels, npy without its labels file, hdf5/npz
  // --labels-dataset none; speech with transcripts has targets): source order, no validation split, so prediction row i is the
  // input's i-th sample. It was shuffled with 10% moved to a val split, and predict's rows no
  // longer matched the input's (a hostile finding).
  if (!out.inputs.empty() && !out.inputs[0].source->spec().labeled && !out.inputs[0].source->spec().sequence_targets()) {
    if (opt.plan.val_fraction > 0 && spec.val_fraction_given) throw unlabelled_val(spec);
    opt.plan.val_fraction = 0.0;
    opt.plan.shuffle = false;
  }
  if (!spec.sample_shape.empty()) {
    const std::vector<int64_t> shape = parse_sample_shape(spec.sample_shape);
    for (InputSplit& in : out.inputs) in.source = reshape_samples(std::move(in.source), shape);
  }
  // Arrays keep the order of their axes; an [H,W,C] image read as C=H channels of HxW trains
  // on scrambled pixels without a word, so that shape is refused unless --layout says which.
  if (spec.layout == "channels-last")
    for (InputSplit& in : out.inputs) in.source = channels_first(std::move(in.source));
  if (arrays && spec.layout.empty() && !out.inputs.empty()) {
    const DatasetSpec& s = out.inputs[0].source->spec();
    if (!s.ragged && looks_channels_last(s.sample_shape)) {
      std::vector<int64_t> moved = s.sample_shape;
      std::rotate(moved.rbegin(), moved.rbegin() + 1, moved.rend());
      const auto text = [](const std::vector<int64_t>& shape) {
        std::string t;
        for (const int64_t d : shape) t += (t.empty() ? "" : ",") + std::to_string(d);
        return t;
      };
      throw UsageError(fmt::format("{}: samples of shape [{}] look channels-last (the last axis holds the channels); "
                                   "lockstep models take channels first: pass --layout channels-last to store them as "
                                   "[{}], or --layout channels-first if [{}] is right",
                                   out.inputs[0].source->name(), text(s.sample_shape), text(moved),
                                   text(s.sample_shape)));
    }
  }
  if (opt.class_names.empty()) opt.class_names = names;
  opt.input_files = files;
  if (kind == "idx" || kind == "images") opt.input_files.push_back(path);
  std::string array_spec = kind == "npy" || kind == "npz" ? "|arrays=" + spec.input + ";" + spec.test_input : "";
  if (!spec.sample_shape.empty()) array_spec += "|reshape=" + spec.sample_shape;
  if (spec.layout == "channels-last") array_spec += "|channels_last";
  if (kind == "images")
    array_spec += fmt::format("|{}|size={}x{}|color={}|skip_bad={}", listing, spec.images.height, spec.images.width,
                              spec.images.color, spec.images.skip_bad);
  const CsvOptions& csv = spec.csv;
  const std::string input_kind = kind;  // a structured binding: clang's C++17 does not capture one
  const auto fingerprint = [&](const std::string& files_part) {
    return fmt::format(
        "lockstep-import-v1|{}{}|shards={}|val={}|limit={}|shuffle={}|seed={}|deflate={}|chunk={}|name={}|classes={}"
        "|csv={},{},{},{},{},{},{},{}|h5={},{}|har={}|video={},{},{}x{},{},{}",
        input_kind, files_part, opt.plan.shards, opt.plan.val_fraction, opt.plan.limit, opt.plan.shuffle,
        opt.plan.seed, opt.write.compression, opt.write.chunk_samples, opt.name, spec.class_names, csv.label_column,
        csv.header, csv.delimiter, csv.window, csv.stride, csv.window_labels, csv.group_column, csv.ignore_columns,
        spec.samples_dataset, spec.labels_dataset, spec.har_signals, spec.video.clip_frames, spec.video.clip_stride,
        spec.video.height, spec.video.width, spec.video.rgb, spec.video.skip_edges) + array_spec +
        (spec.no_labels ? "|no_labels" : "") + (input_kind == "video" && spec.video.frame_table ? "|frame_table" : "");
  };
  out.fingerprint = fingerprint(file_fingerprint(files));
  out.legacy_fingerprint = fingerprint(file_fingerprint(files, /*legacy=*/true));
  return out;
}

}  // namespace lockstep::io
