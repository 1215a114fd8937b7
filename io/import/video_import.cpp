// video_import: see video_import.hpp.
#include "io/import/video_import.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <unistd.h>

#include "core/base/error.hpp"
#include "core/base/log.hpp"
#include "io/import/text_fields.hpp"
#include "io/import/video_decoder.hpp"
#include "io/util/file_util.hpp"
#include "core/base/parallel_for.hpp"

namespace lockstep::io {
namespace {

struct LabelRow {
  std::string video;  // resolved path
  std::string group;  // "" without groups
  int64_t frame = 0;  // -1: every frame of the video (unlabelled, no frame column)
  std::string label;
  int line = 0;
};

struct Video {
  std::string path;
  std::string where;  // CSV:LINE that first named it, for decode errors
  VideoProbe probe;
  int64_t lo = 0, hi = 0;  // the frames its clips read
  int64_t begin = 0, end = 0;  // its samples [begin, end) in source order
  std::vector<bool> keep;      // frame lo + i is in some clip
  std::vector<int64_t> slot;   // frame lo + i's index among the kept frames
};

struct Clip {
  int32_t video = 0;
  int64_t frame = 0;
};

int64_t parse_frame(const std::string& s, const std::string& where) {
  LOCKSTEP_REQUIRE(!s.empty() && s.size() < 16 && s.find_first_not_of("0123456789") == std::string::npos,
                   where + ": frame '" + s + "' is not a frame index (0, 1, 2, ...)");
  return std::stoll(s);
}

std::vector<LabelRow> read_label_csv(const std::string& path, const std::string& group_column, bool labeled) {
  LOCKSTEP_REQUIRE(!is_directory(path), path + ": is a directory; video:FILE names the label CSV");
  std::ifstream in(path);
  LOCKSTEP_REQUIRE(in.good(), path + ": cannot open the video label CSV");
  const std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  std::string line;
  LOCKSTEP_REQUIRE(static_cast<bool>(std::getline(in, line)),
                   path + ": empty file (expected a header " + (labeled ? "video,frame,label)" : "video[,frame])"));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);  // a UTF-8 byte-order mark
  const std::vector<std::string> header = split_quoted_fields(line, ',', path, 1);
  for (size_t i = 0; i < header.size(); ++i)
    LOCKSTEP_REQUIRE(std::find(header.begin() + static_cast<std::ptrdiff_t>(i) + 1, header.end(), header[i]) ==
                         header.end(),
                     path + ":1: the column '" + header[i] + "' is named twice");
  auto column = [&](const std::string& name) -> int {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  };
  const int c_video = column("video"), c_frame = column("frame"), c_label = labeled ? column("label") : -1;
  LOCKSTEP_REQUIRE(!labeled || (c_video >= 0 && c_frame >= 0 && c_label >= 0),
                   path + ":1: the header must name the columns video, frame and label (got '" + line + "')");
  LOCKSTEP_REQUIRE(labeled || c_video >= 0, path + ":1: the header must name the column video, and frame to choose "
                                                   "frames (got '" + line + "')");
  int c_group = -1;
  if (group_column.empty()) {
    c_group = column("trial");
  } else if (group_column != "none") {
    c_group = column(group_column);
    LOCKSTEP_REQUIRE(c_group >= 0, path + ":1: no column '" + group_column + "' (--group-column) in the header");
  }
  const size_t width = header.size();
  std::vector<LabelRow> rows;
  for (int no = 2; std::getline(in, line); ++no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim(line).empty()) continue;
    const std::string where = path + ":" + std::to_string(no);
    const std::vector<std::string> f = split_quoted_fields(line, ',', path, no);
    LOCKSTEP_REQUIRE(f.size() == width, where + ": " + std::to_string(f.size()) + " fields, the header has " +
                                            std::to_string(width));
    LabelRow r;
    LOCKSTEP_REQUIRE(!f[c_video].empty(), where + ": empty video");
    LOCKSTEP_REQUIRE(f[c_video].find('\0') == std::string::npos, where + ": a NUL byte in the video path");
    r.video = f[c_video][0] == '/' ? f[c_video] : dir + "/" + f[c_video];
    r.video = canonical_path(r.video);  // one file, one video, however the CSV spells it
    r.frame = c_frame >= 0 ? parse_frame(f[c_frame], where) : -1;
    if (labeled) {
      r.label = f[c_label];
      LOCKSTEP_REQUIRE(!r.label.empty(), where + ": empty label");
    }
    if (c_group >= 0) {
      r.group = f[c_group];
      LOCKSTEP_REQUIRE(!r.group.empty(), where + ": empty " + header[c_group]);
    }
    r.line = no;
    rows.push_back(std::move(r));
  }
  LOCKSTEP_REQUIRE(!rows.empty(), path + (labeled ? ": no labelled frames" : ": no rows after the header"));
  return rows;
}

class VideoSource final : public SampleSource {
 public:
  VideoSource(std::string csv, DatasetSpec spec, std::vector<Video> videos, std::vector<Clip> clips,
              std::vector<int64_t> labels, std::vector<int64_t> groups, FrameFormat format, int threads)
      : csv_(std::move(csv)),
        spec_(std::move(spec)),
        videos_(std::move(videos)),
        clips_(std::move(clips)),
        labels_(std::move(labels)),
        groups_(std::move(groups)),
        format_(format),
        threads_(std::max(1, threads)) {}
  const DatasetSpec& spec() const override { return spec_; }
  int64_t count() const override { return static_cast<int64_t>(clips_.size()); }
  const std::vector<int64_t>& labels() const override { return labels_; }
  const std::vector<int64_t>& groups() const override { return groups_; }
  std::string name() const override { return csv_; }

  void read(int64_t begin, int64_t n, void* out) override {
    LOCKSTEP_REQUIRE(begin >= 0 && n >= 0 && begin + n <= count(), csv_ + ": read past the end");
    if (n == 0) return;
    const int32_t v_first = clips_[static_cast<size_t>(begin)].video;
    const int32_t v_last = clips_[static_cast<size_t>(begin + n - 1)].video;
    decode_range(v_first, std::max(v_last, std::min<int32_t>(v_first + threads_ - 1, last_video())));
    const int64_t t_len = spec_.sample_shape[1], c_len = spec_.sample_shape[0];
    const size_t plane = static_cast<size_t>(spec_.sample_shape[2] * spec_.sample_shape[3]);
    auto* dst = static_cast<uint8_t*>(out);
    for (int64_t i = 0; i < n; ++i) {
      const Clip& clip = clips_[static_cast<size_t>(begin + i)];
      const Video& v = videos_[static_cast<size_t>(clip.video)];
      const std::vector<uint8_t>& frames = decoded_.at(clip.video);
      for (int64_t c = 0; c < c_len; ++c)
        for (int64_t t = 0; t < t_len; ++t) {
          const int64_t f = v.slot[static_cast<size_t>(
              std::clamp<int64_t>(clip.frame - t_len / 2 + t, 0, v.probe.frames - 1) - v.lo)];
          const uint8_t* src = frames.data() + (static_cast<size_t>(f * c_len + c)) * plane;
          std::copy(src, src + plane, dst + static_cast<size_t>((i * c_len + c) * t_len + t) * plane);
        }
    }
    // Videos whose clips are all written are not needed again (reads go forward).
    for (auto it = decoded_.begin(); it != decoded_.end();)
      it = videos_[static_cast<size_t>(it->first)].end <= begin + n ? decoded_.erase(it) : std::next(it);
    if (begin + n == count())
      log::info0(fmt::format("[shard] {}: decoded {} frames of {} videos in {:.2f} s ({:.0f} frames/s, {} threads)", csv_,
                             frames_decoded_, videos_.size(), decode_secs_,
                             decode_secs_ > 0 ? static_cast<double>(frames_decoded_) / decode_secs_ : 0.0, threads_));
  }

 private:
  int32_t last_video() const { return static_cast<int32_t>(videos_.size()) - 1; }

  // Decodes videos [A, B] not decoded yet, THREADS_ at a time.
  void decode_range(int32_t a, int32_t b) {
    std::vector<int32_t> todo;
    for (int32_t v = a; v <= b; ++v)
      if (!decoded_.count(v)) todo.push_back(v);
    if (todo.empty()) return;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::vector<uint8_t>> bufs(todo.size());
    std::vector<int64_t> counts(todo.size(), 0);
    // The first failed video in source order is the error.
    parallel_for(static_cast<int64_t>(todo.size()), threads_, [&](int64_t k) {
      const Video& v = videos_[static_cast<size_t>(todo[static_cast<size_t>(k)])];
      try {
        counts[static_cast<size_t>(k)] = decode_frames(v.path, v.lo, v.hi, format_, &bufs[static_cast<size_t>(k)], &v.keep);
      } catch (const Error& e) {
        throw Error(v.where + ": " + e.what());
      }
    });
    for (size_t k = 0; k < todo.size(); ++k) {
      decoded_[todo[k]] = std::move(bufs[k]);
      frames_decoded_ += counts[k];
    }
    decode_secs_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  std::string csv_;
  DatasetSpec spec_;
  std::vector<Video> videos_;
  std::vector<Clip> clips_;
  std::vector<int64_t> labels_, groups_;
  FrameFormat format_;
  int threads_;
  std::map<int32_t, std::vector<uint8_t>> decoded_;  // video -> frames [lo, hi], C x H x W each
  int64_t frames_decoded_ = 0;
  double decode_secs_ = 0.0;
};

// One CSV's rows turned into videos and clips (steps 1-2 of the header).
struct Planned {
  std::vector<Video> videos;
  std::vector<Clip> clips;
  std::vector<int64_t> labels, groups;
};

Planned plan_clips(const std::string& csv, const std::vector<LabelRow>& rows, const std::map<std::string, int64_t>& class_id,
                   const VideoOptions& opt, std::map<std::string, VideoProbe>* probes) {
  Planned p;
  std::map<std::string, int32_t> video_id;
  std::map<std::string, std::pair<std::string, int>> group_video;        // group -> (video, line)
  std::map<std::pair<int32_t, int64_t>, int> seen;                       // (video, frame) -> line
  std::map<std::pair<int32_t, std::string>, std::vector<const LabelRow*>> runs;  // (video, group) -> rows
  std::deque<LabelRow> every_frame;  // unlabelled rows naming a whole video, one per frame
  std::map<int32_t, int> whole;      // video -> the line naming it whole
  const auto add = [&](const LabelRow& r) {
    const std::string where = csv + ":" + std::to_string(r.line);
    auto vit = video_id.find(r.video);
    if (vit == video_id.end()) {
      if (!path_exists(r.video))
        throw Error(where + ": video " + r.video +
                    (is_symlink(r.video) ? " is a symbolic link to nothing (its target is gone, or links loop)"
                                         : " not found"));
      auto pit = probes->find(r.video);
      if (pit == probes->end()) {
        try {  // the line that named the video, then what is wrong with it
          pit = probes->emplace(r.video, probe_video(r.video)).first;
        } catch (const Error& e) {
          throw Error(where + ": " + e.what());
        }
      }
      Video v;
      v.path = r.video;
      v.where = where;
      v.probe = pit->second;
      vit = video_id.emplace(r.video, static_cast<int32_t>(p.videos.size())).first;
      p.videos.push_back(v);
    }
    const Video& v = p.videos[static_cast<size_t>(vit->second)];
    if (r.frame < 0) {  // every frame of the video
      const auto [wit, first] = whole.emplace(vit->second, r.line);
      LOCKSTEP_REQUIRE(first, where + ": video " + r.video + " is listed twice (also on line " +
                                  std::to_string(wit->second) + ")");
      for (int64_t f = 0; f < v.probe.frames; ++f) {
        every_frame.push_back(r);
        every_frame.back().frame = f;
      }
      return static_cast<int64_t>(every_frame.size()) - v.probe.frames;
    }
    LOCKSTEP_REQUIRE(r.frame < v.probe.frames, where + ": frame " + std::to_string(r.frame) + " of " + r.video +
                                                   " is past the video's end (it has " +
                                                   std::to_string(v.probe.frames) + " frames)");
    LOCKSTEP_REQUIRE(!opt.labeled || class_id.count(r.label),
                     where + ": label '" + r.label + "' is not a class of the training CSV (or --class-names)");
    const auto [sit, fresh] = seen.emplace(std::make_pair(vit->second, r.frame), r.line);
    LOCKSTEP_REQUIRE(fresh, where + ": frame " + std::to_string(r.frame) + " of " + r.video + " is " +
                                (opt.labeled ? "labelled" : "listed") + " twice (also on line " +
                                std::to_string(sit->second) + ")");
    if (!r.group.empty()) {
      const auto [git, first] = group_video.emplace(r.group, std::make_pair(r.video, r.line));
      LOCKSTEP_REQUIRE(first || git->second.first == r.video,
                       where + ": trial '" + r.group + "' is in " + r.video + ", but line " +
                           std::to_string(git->second.second) + " put it in " + git->second.first +
                           ": a trial must lie in one video");
    }
    runs[{vit->second, r.group}].push_back(&r);
    return int64_t{-1};
  };
  for (const LabelRow& r : rows) {
    const int64_t first = add(r);
    if (first >= 0)  // a whole video: its frames, each a row of its own (deque: the pointers stay valid)
      for (size_t i = static_cast<size_t>(first); i < every_frame.size(); ++i) add(every_frame[i]);
  }
  // Every --clip-stride'th labelled frame of each trial, minus the edge clips when skipped.
  std::map<std::string, int64_t> group_id;
  std::vector<std::vector<std::pair<int64_t, const LabelRow*>>> per_video(p.videos.size());
  const int64_t before = opt.clip_frames / 2, after = (opt.clip_frames - 1) / 2;
  int64_t strided = 0, skipped = 0;  // clip centres after --clip-stride; of them dropped at the edges
  for (auto& [key, list] : runs) {
    std::sort(list.begin(), list.end(), [](const LabelRow* a, const LabelRow* b) { return a->frame < b->frame; });
    const Video& v = p.videos[static_cast<size_t>(key.first)];
    for (size_t i = 0; i < list.size(); i += static_cast<size_t>(opt.clip_stride)) {
      const int64_t f = list[i]->frame;
      ++strided;
      if (opt.skip_edges && (f - before < 0 || f + after >= v.probe.frames)) {
        ++skipped;
        continue;
      }
      per_video[static_cast<size_t>(key.first)].emplace_back(f, list[i]);
    }
  }
  if (skipped > 0)  // the rows and clips no longer correspond one to one: said, with the count
    log::info0(fmt::format("[shard] {}: --clip-edges skip dropped {} of {} clips (their frames are too close to a "
                           "video's start or end)", csv, skipped, strided));
  for (size_t vi = 0; vi < p.videos.size(); ++vi) {
    auto& list = per_video[vi];
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    Video& v = p.videos[vi];
    v.begin = static_cast<int64_t>(p.clips.size());
    v.lo = list.empty() ? 0 : std::max<int64_t>(0, list.front().first - before);
    v.hi = list.empty() ? 0 : std::min<int64_t>(v.probe.frames - 1, list.back().first + after);
    v.keep.assign(static_cast<size_t>(v.hi - v.lo + 1), false);
    for (const auto& [f, row] : list)
      for (int64_t k = std::max<int64_t>(0, f - before); k <= std::min<int64_t>(v.probe.frames - 1, f + after); ++k)
        v.keep[static_cast<size_t>(k - v.lo)] = true;
    v.slot.assign(v.keep.size(), -1);
    int64_t kept = 0;
    for (size_t k = 0; k < v.keep.size(); ++k)
      if (v.keep[k]) v.slot[k] = kept++;
    for (const auto& [f, row] : list) {
      p.clips.push_back({static_cast<int32_t>(vi), f});
      p.labels.push_back(opt.labeled ? class_id.at(row->label) : 0);
      if (!row->group.empty())
        p.groups.push_back(group_id.emplace(row->group, static_cast<int64_t>(group_id.size())).first->second);
    }
    v.end = static_cast<int64_t>(p.clips.size());
  }
  LOCKSTEP_REQUIRE(!p.clips.empty(), csv + ": no clips (every labelled frame is too close to its video's edge for "
                                           "--clip-edges skip)");
  return p;
}

}  // namespace

std::vector<InputSplit> open_video(const std::vector<std::pair<std::string, std::string>>& split_files,
                                   const VideoOptions& opt, const std::vector<std::string>& class_names,
                                   std::vector<std::string>* names, std::vector<std::string>* files) {
  // open_import checked the clip options (import_spec.cpp); a direct caller must too.
  LOCKSTEP_REQUIRE(opt.clip_frames >= 1 && opt.clip_frames <= 4096 && opt.clip_stride >= 1,
                   "open_video: clip options out of range (open_import checks them)");
  if (opt.height > 8192 || opt.width > 8192) throw UsageError("--frame-size is at most 8192x8192");
  std::vector<std::vector<LabelRow>> csvs;
  for (const auto& [split, file] : split_files) csvs.push_back(read_label_csv(file, opt.group_column, opt.labeled));
  *names = class_names;
  if (names->empty() && opt.labeled) {
    std::set<std::string> labels;
    for (const LabelRow& r : csvs[0]) labels.insert(r.label);
    names->assign(labels.begin(), labels.end());
  }
  std::map<std::string, int64_t> class_id;
  for (size_t i = 0; i < names->size(); ++i) class_id[(*names)[i]] = static_cast<int64_t>(i);

  std::map<std::string, VideoProbe> probes;
  std::vector<Planned> plans;
  for (size_t s = 0; s < csvs.size(); ++s)
    plans.push_back(plan_clips(split_files[s].second, csvs[s], class_id, opt, &probes));
  // One sample shape for every split.
  FrameFormat format;
  format.rgb = opt.rgb;
  format.height = opt.height;
  format.width = opt.width;
  const Video& first = plans[0].videos[0];
  for (const Planned& p : plans)
    for (const Video& v : p.videos) {
      files->push_back(v.path);
      if (opt.height == 0)
        LOCKSTEP_REQUIRE(v.probe.width == first.probe.width && v.probe.height == first.probe.height,
                         v.path + " is " + std::to_string(v.probe.width) + "x" + std::to_string(v.probe.height) +
                             " (WxH), " + first.path + " is " + std::to_string(first.probe.width) + "x" +
                             std::to_string(first.probe.height) + ": pass --frame-size HxW to resize them all");
    }
  if (format.height == 0) {
    format.height = first.probe.height;
    format.width = first.probe.width;
  }
  // A clip is a number of frames: at two frame rates it spans two durations (17 frames are
  // 1.7 s at 10 fps, 0.68 s at 25), and a model learns the rate. Said, not refused (a
  // cohort may be filmed so on purpose); a video of unknown rate (no timestamps) is left out.
  const Video *timed = nullptr, *other = nullptr;  // the first video of known rate, one of another
  for (const Planned& p : plans)
    for (const Video& v : p.videos) {
      if (v.probe.fps <= 0 || other) continue;
      if (!timed) timed = &v;
      if (std::fabs(v.probe.fps / timed->probe.fps - 1.0) > 0.02) other = &v;
    }
  if (other)
    log::warn(fmt::format("{} is {:.2f} fps, {} is {:.2f} fps: a clip of {} frames spans {:.2f} s in one and {:.2f} s "
                          "in the other (re-encode to one rate with ffmpeg -fps_mode cfr -r RATE if they should match)",
                          other->path, other->probe.fps, timed->path, timed->probe.fps, opt.clip_frames,
                          static_cast<double>(opt.clip_frames) / other->probe.fps,
                          static_cast<double>(opt.clip_frames) / timed->probe.fps));
  // A video or trial in both training and test makes the test measure seen footage.
  for (size_t s = 1; s < csvs.size(); ++s) {
    std::set<std::string> train_videos, train_groups;
    for (const LabelRow& r : csvs[0]) {
      train_videos.insert(r.video);
      if (!r.group.empty()) train_groups.insert(r.group);
    }
    std::set<std::string> shared_videos, shared_groups;
    for (const LabelRow& r : csvs[s]) {
      if (train_videos.count(r.video)) shared_videos.insert(r.video);
      if (!r.group.empty() && train_groups.count(r.group)) shared_groups.insert(r.group);
    }
    if (!shared_videos.empty() || !shared_groups.empty())
      log::warn(split_files[s].second + ": " + std::to_string(shared_videos.size()) + " video(s) and " +
                std::to_string(shared_groups.size()) + " trial(s) also in the training CSV: the " + split_files[s].first +
                " split does not measure unseen footage");
  }
  DatasetSpec spec;
  spec.sample_shape = {format.channels(), opt.clip_frames, format.height, format.width};
  LOCKSTEP_REQUIRE(spec.sample_bytes() <= (size_t{1} << 31),
                   "a clip of " + std::to_string(opt.clip_frames) + " frames of " + std::to_string(format.height) + "x" +
                       std::to_string(format.width) + " is over 2 GiB: lower --clip-frames or --frame-size");
  spec.dtype = DType::kUInt8;
  spec.labeled = opt.labeled;
  spec.frame_table = opt.frame_table;
  spec.num_classes = static_cast<int64_t>(names->size());
  spec.class_names = *names;
  const int threads = std::min(256, opt.threads > 0 ? opt.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  // A video being decoded holds every frame its clips use (a whole video, for unlabelled
  // rows without frames), THREADS videos at a time: refused before decoding when that would
  // take over half the machine's memory, rather than ending in the kernel's OOM kill.
  const size_t frame_bytes = spec.sample_bytes() / static_cast<size_t>(opt.clip_frames);
  const double ram = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGE_SIZE));
  for (const Planned& p : plans) {
    std::vector<std::pair<double, const Video*>> held;
    for (const Video& v : p.videos)
      held.emplace_back(static_cast<double>(std::count(v.keep.begin(), v.keep.end(), true)) * static_cast<double>(frame_bytes), &v);
    std::sort(held.begin(), held.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    double peak = 0;
    for (size_t i = 0; i < held.size() && i < static_cast<size_t>(threads); ++i) peak += held[i].first;
    if (ram > 0 && peak > ram / 2)
      throw UsageError(fmt::format("{}: decoding needs {:.1f} GB of frames at once ({} holds {:.1f} GB of {}x{} frames; "
                                   "--decode-threads {}), over half of this machine's {:.1f} GB: lower --decode-threads "
                                   "or --frame-size, or split the video",
                                   held[0].second->path, peak / 1e9, held[0].second->path, held[0].first / 1e9,
                                   format.height, format.width, threads, ram / 1e9));
  }
  std::vector<InputSplit> out;
  for (size_t s = 0; s < plans.size(); ++s) {
    Planned& p = plans[s];
    out.push_back({split_files[s].first,
                   std::make_unique<VideoSource>(split_files[s].second, spec, std::move(p.videos), std::move(p.clips),
                                                 std::move(p.labels), std::move(p.groups), format, threads),
                   s == 0});
  }
  return out;
}

}  // namespace lockstep::io
