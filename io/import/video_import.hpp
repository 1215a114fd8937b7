// video_import: per-frame behaviour labels on video, `lockstep shard --input video:LABELS.csv
// [--test-input video:TEST.csv]`.
//
// LABELS.csv has a header naming at least the columns video, frame and label (any order;
// more columns are ignored), one row per labelled frame:
//   video,trial,frame,label
//   videos/mouse-03.mp4,m03-t1,120,rest
// video: a file FFmpeg reads (mp4, mkv, avi, ...; relative to the CSV's directory, or
// absolute), frame: its 0-based index in presentation order, label: the class name.
// The group column (--group-column, default 'trial' when the CSV has one; 'none': no
// groups) names each row's trial: a trial lies in one video, and the validation split
// takes whole trials (import_plan.hpp), so no trial has clips in two splits.
//
// 1. Every video is probed (video_decoder.hpp): frame count, size, constant frame rate.
// 2. Clips: one per labelled frame f — every --clip-stride'th labelled frame of each trial
//    (of each video without groups) — of T = --clip-frames frames f - T/2 ... f + (T-1)/2
//    (T odd: f in the middle). Edges (--clip-edges): 'pad' repeats the video's first or
//    last frame for the frames before 0 or past the end; 'skip' drops those clips. Clips
//    may take context frames from outside their trial (the video continues there).
// 3. Samples are uint8 [C, T, H, W]: C = 1 (--color gray) or 3 (rgb), H x W =
//    --frame-size (default: the videos' own size, which must then be the same for all).
//    Stored as a frame table (--video-storage frames, the default: each frame once per
//    shard, io/import/clip_shard.hpp) or as whole clips (clips: a frame up to T times).
// 4. The import reads the clips in source order (video by video, frame by frame); each
//    video is decoded once, several at a time (--decode-threads, default: every core),
//    only up to its last needed frame, and dropped when its clips are written.
// 5. Classes: the training CSV's label names, sorted (or --class-names, in that order).
// Unlabelled (`--no-labels`, footage to run a trained model on): the label column is not
// needed (nor read); without a frame column each row names a whole video, and every
// --clip-stride'th frame of it is a clip's centre. The samples are stored in source order
// (videos in the order the CSV first names them, frames ascending), so `predict`'s row i
// is the i-th clip of that order.
// Refused, with one line naming the CSV line or the video and frame: a missing or
// unreadable video, a truncated one (it decodes to fewer frames than the labels need),
// a frame past a video's end, a frame size or frame rate that changes mid-file, a trial in
// two videos, a frame labelled twice, a label the training CSV does not have. Nothing is
// committed when the import fails (importer.hpp). Warned: a video or trial in both the
// training and the test CSV.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "io/import/importer.hpp"

namespace lockstep::io {

struct VideoOptions {
  int64_t clip_frames = 17;
  int64_t clip_stride = 1;
  int height = 0, width = 0;  // 0: the videos' own size
  bool rgb = false;
  bool skip_edges = false;     // false: pad with the edge frames
  std::string group_column;    // "": 'trial' when present; "none": no groups
  int threads = 0;             // decoding threads, 0: every core
  bool labeled = true;         // false (--no-labels): clips to predict on, see above
  bool frame_table = true;     // store each frame once (shard format v3); false: whole clips (--video-storage clips)
};


// SPLIT_FILES: (split, labels CSV) pairs; the first (train) gets --val-fraction and
// defines the classes unless CLASS_NAMES is given. *NAMES gets the class names; every
// video read is appended to FILES.
std::vector<InputSplit> open_video(const std::vector<std::pair<std::string, std::string>>& split_files,
                                   const VideoOptions& opt, const std::vector<std::string>& class_names,
                                   std::vector<std::string>* names, std::vector<std::string>* files);

}  // namespace lockstep::io
