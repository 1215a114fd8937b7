// video_decoder: reads video files with FFmpeg's libraries (libavformat demuxes mp4, mkv,
// avi, ...; libavcodec decodes; libswscale converts to grayscale or RGB at the size asked).
//
// 1. probe_video() reads the container once without decoding: the frame count (video
//    packets), the coded size and the frame rate. It refuses a stream whose frame
//    interval changes (variable frame rate: clip length in time would vary) naming the
//    frame where it changes, and one with frames missing from its timeline (dropped
//    frames: a jump in the per-frame positions, in AVI too, whose positions are frame
//    indices) naming where: decode order would shift every later frame's label.
// 2. decode_frames() decodes from the start (no seeking: exact frame indices in
//    presentation order, whatever the codec's reordering) up to the last frame asked for,
//    converts frames [FIRST, LAST] to planar uint8 [C, H, W] and refuses a frame whose
//    coded size or pixel format differs from the first one, and a video that ends (or
//    breaks) before LAST, naming the file and the frame.
// Every handle is RAII; every FFmpeg call is checked and reported with its own error
// text and file:line. One decoder per call, single-threaded: callers decode several
// videos at once (io/import/video_import), which scales better for many short videos.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::io {

struct VideoProbe {
  int64_t frames = 0;  // video packets: one per frame for every codec lockstep reads
  int width = 0, height = 0;
  double fps = 0.0;    // 0 when the container has no timestamps (raw streams)
};

// Throws Error naming PATH when it cannot be opened as a video, has no video stream, or
// its frame rate changes mid-file.
VideoProbe probe_video(const std::string& path);

struct FrameFormat {
  int width = 0, height = 0;  // output size (0: the video's own)
  bool rgb = false;           // false: one gray channel; true: R, G, B planes
  int channels() const { return rgb ? 3 : 1; }
};

// Appends frames [FIRST, LAST] of PATH, each C x H x W uint8 (planar), to OUT — only
// those with KEEP[i - FIRST] true when KEEP is given (clips far apart in a long video need
// not hold the frames between them). Returns the number of frames decoded (LAST + 1:
// every frame before FIRST is decoded too).
int64_t decode_frames(const std::string& path, int64_t first, int64_t last, const FrameFormat& format,
                      std::vector<uint8_t>* out, const std::vector<bool>* keep = nullptr);

}  // namespace lockstep::io
