// video_decoder: see video_decoder.hpp.
#include "io/import/video_decoder.hpp"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/display.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include <algorithm>
#include <memory>
#include <mutex>
#include <type_traits>

#include <fmt/format.h>

#include "core/base/error.hpp"
#include "core/base/log.hpp"

namespace lockstep::io {
namespace {

[[noreturn]] void av_fail(int rc, const std::string& what, const char* file, int line) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {0};
  av_strerror(rc, buf, sizeof buf);
  throw_at(what + ": " + buf, file, line);
}

// The check helper for FFmpeg calls (negative AVERROR codes).
#define AV_CHECK(call, what)                                   \
  do {                                                         \
    const int av_rc_ = (call);                                 \
    if (av_rc_ < 0) av_fail(av_rc_, (what), __FILE__, __LINE__); \
  } while (0)

struct FormatCloser {
  void operator()(AVFormatContext* f) const { avformat_close_input(&f); }
};
struct CodecFreer {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FrameFreer {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketFreer {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct SwsFreer {
  void operator()(SwsContext* s) const { sws_freeContext(s); }
};

// The integer in an enum-typed field a decoder filled from the file's own bytes. A codec
// copies some of them straight from the bitstream (an H.264 VUI's matrix coefficients can be
// any byte), so the value may name no enumerator, and loading it as the enum type is
// undefined behaviour (the video fuzzer found one in colorspace). Every such field is read
// through here, as the int FFmpeg stores.
template <typename Enum>
int raw_enum(const Enum& field) {
  static_assert(std::is_enum_v<Enum> && sizeof(Enum) == sizeof(int), "an FFmpeg enum field, stored as an int");
  int v = 0;
  std::memcpy(&v, &field, sizeof v);
  return v;
}

// FFmpeg's own log lines would repeat (less clearly) what the errors below say.
void quiet_ffmpeg() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_level(AV_LOG_FATAL); });
}

// An open container and its best video stream.
class Container {
 public:
  explicit Container(const std::string& path) : path_(path) {
    quiet_ffmpeg();
    // A FIFO or device would block or never end: only regular files.
    struct stat st {};
    LOCKSTEP_REQUIRE(::stat(path.c_str(), &st) == 0, path + ": cannot open as video: no such file");
    LOCKSTEP_REQUIRE(S_ISREG(st.st_mode), path + ": not a regular file (a directory, FIFO or device is not a video)");
    AVFormatContext* raw = nullptr;
    AV_CHECK(avformat_open_input(&raw, path.c_str(), nullptr, nullptr), path + ": cannot open as video");
    fmt_.reset(raw);
    AV_CHECK(avformat_find_stream_info(fmt_.get(), nullptr), path + ": cannot read the stream information");
    stream_ = av_find_best_stream(fmt_.get(), AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
    AV_CHECK(stream_, path + ": no video stream");
    LOCKSTEP_REQUIRE(!(stream()->disposition & AV_DISPOSITION_ATTACHED_PIC),
                     path + ": no video stream (only an attached picture, e.g. cover art)");
  }
  bool is_avi() const { return std::string(fmt_->iformat->name) == "avi"; }
  // An MPEG program stream (.mpg, .vob): a pts on some packets only, and dts that repeat and
  // jump at 30 and 29.97 fps (FFmpeg's own files; its decoder restamps the frames evenly), so
  // its demuxed timeline says nothing of dropped frames.
  bool is_program_stream() const { return std::string(fmt_->iformat->name) == "mpeg"; }
  AVFormatContext* get() const { return fmt_.get(); }
  AVStream* stream() const { return fmt_->streams[stream_]; }
  int index() const { return stream_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::unique_ptr<AVFormatContext, FormatCloser> fmt_;
  int stream_ = -1;
};

std::unique_ptr<AVPacket, PacketFreer> new_packet(const std::string& path) {
  std::unique_ptr<AVPacket, PacketFreer> p(av_packet_alloc());
  LOCKSTEP_REQUIRE(p != nullptr, path + ": out of memory (av_packet_alloc)");
  return p;
}

}  // namespace

VideoProbe probe_video(const std::string& path) {
  Container c(path);
  VideoProbe probe;
  const AVCodecParameters* par = c.stream()->codecpar;
  probe.width = par->width;
  probe.height = par->height;
  LOCKSTEP_REQUIRE(probe.width > 0 && probe.height > 0, path + ": the video stream has no frame size");
  int video_streams = 0;
  for (unsigned i = 0; i < c.get()->nb_streams; ++i)
    video_streams += c.get()->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_VIDEO &&
                     !(c.get()->streams[i]->disposition & AV_DISPOSITION_ATTACHED_PIC);
  if (video_streams > 1)
    log::warn(path + ": " + std::to_string(video_streams) + " video streams; reading stream " +
              std::to_string(c.index()) + " (FFmpeg's best)");
  const auto* matrix = reinterpret_cast<const int32_t*>(
      av_stream_get_side_data(c.stream(), AV_PKT_DATA_DISPLAYMATRIX, nullptr));
  if (matrix) {
    const double angle = av_display_rotation_get(matrix);
    if (std::isfinite(angle) && std::lround(angle) % 360 != 0)
      log::warn(path + ": its rotation metadata (" + std::to_string(std::lround(-angle)) +
                " degrees) is not applied: frames are imported as coded, not as players show them");
  }
  auto pkt = new_packet(path);
  // Every container's per-frame positions are checked, AVI's too: its position is the
  // frame's index in the stream (dts; its pts is missing or shuffled around B-frames),
  // and a dropped frame is a jump in it (9 -> 15) that decode order would hide, shifting
  // every later frame's label. One clock per stream: where some packets carry no pts, every
  // frame's dts, never a mix of the two (a pts of one frame equals the dts of the next:
  // "the frame rate changes ... 0 ms"). MPEG program streams are not checked (below).
  std::vector<int64_t> pts, dts;
  for (;;) {
    const int rc = av_read_frame(c.get(), pkt.get());
    if (rc == AVERROR_EOF) break;
    AV_CHECK(rc, path + ": read error after " + std::to_string(probe.frames) + " frames");
    // Packets an edit list cuts away (mp4) are demuxed but never shown: not frames.
    if (pkt->stream_index == c.index() && !(pkt->flags & AV_PKT_FLAG_DISCARD)) {
      ++probe.frames;
      pts.push_back(pkt->pts);
      dts.push_back(pkt->dts);
    }
    av_packet_unref(pkt.get());
  }
  LOCKSTEP_REQUIRE(probe.frames > 0, path + ": the video stream holds no frames");
  const auto untimed = [](const std::vector<int64_t>& v) {
    return std::find(v.begin(), v.end(), AV_NOPTS_VALUE) != v.end();
  };
  std::vector<int64_t>& stamps = c.is_avi() || untimed(pts) ? dts : pts;
  if (c.is_program_stream()) {  // its rate as declared; the timeline is not checked
    const AVRational r = c.stream()->avg_frame_rate;
    if (r.num > 0 && r.den > 0) probe.fps = av_q2d(r);
    return probe;
  }
  if (untimed(stamps) || stamps.size() < 3) return probe;
  // Presentation order, then the intervals: one frame rate means one interval (within
  // rounding of the time base). The median is the video's own rate.
  std::sort(stamps.begin(), stamps.end());
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < stamps.size(); ++i) gaps.push_back(stamps[i] - stamps[i - 1]);
  std::vector<int64_t> sorted = gaps;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  const int64_t typical = sorted[sorted.size() / 2];
  const double tb = av_q2d(c.stream()->time_base);
  LOCKSTEP_REQUIRE(typical > 0, path + ": frames share timestamps (broken timing)");
  probe.fps = 1.0 / (static_cast<double>(typical) * tb);
  // A time base too coarse for the frame interval (Matroska's milliseconds at 750 fps: 1.33
  // ms as gaps of 1, 1, 2 ms) rounds every stamp by up to half a tick, so single gaps say
  // nothing: each frame is held to the straight line from the first stamp to the last
  // instead. An exact time base (AVI's one tick per frame, 2 ms at 500 fps: a whole number
  // of ticks per frame at the stream's declared rate) keeps the per-gap checks below, which
  // name a dropped frame.
  const double mean = static_cast<double>(stamps.back() - stamps.front()) / static_cast<double>(gaps.size());
  const AVRational declared = c.stream()->avg_frame_rate;
  const double ticks = declared.num > 0 && declared.den > 0 ? 1.0 / (av_q2d(declared) * tb) : mean;
  if (typical < 4 && std::fabs(ticks - std::round(ticks)) > 1e-3) {
    probe.fps = 1.0 / (mean * tb);
    size_t worst = 0;  // the frame farthest off the line: where the timeline broke
    double worst_off = 0;
    for (size_t i = 1; i + 1 < stamps.size(); ++i) {
      const double off = static_cast<double>(stamps[i] - stamps.front()) - mean * static_cast<double>(i);
      if (std::fabs(off) > std::fabs(worst_off)) worst = i, worst_off = off;
    }
    if (std::fabs(worst_off) > 1.5)  // a stamp rounds by half a tick, the line's ends by as much
      throw Error(fmt::format("{}: frame {} is {:.2f} ms off a constant rate ({:.2f} fps from the first frame to the "
                              "last): frames missing or the rate changes (its time base, {:g} ms, is too coarse to "
                              "tell which): lockstep reads constant-frame-rate video (re-encode with ffmpeg "
                              "-fps_mode cfr -r RATE into .mp4 or .ts)",
                              path, worst, worst_off * tb * 1000.0, probe.fps, tb * 1000.0));
    return probe;
  }
  // One frame interval, within the time base's rounding (29.97 fps in milliseconds is
  // 33 or 34) or 2%: anything more is another frame rate, or missing frames. A time base
  // of one frame (AVI's index) has no rounding: every step is exactly one.
  const int64_t slack = typical == 1 ? 0 : std::max<int64_t>(1, typical / 50);
  // Whole frame intervals skipped at gap I (0: none, or not a whole number of them).
  const auto lost = [&](size_t i) -> int64_t {
    const int64_t k = (gaps[i] + typical / 2) / typical - 1;
    return k >= 1 && std::llabs(gaps[i] - (k + 1) * typical) <= slack ? k : 0;
  };
  // Another rate anywhere is named first (a drifting clock can also make a whole-interval
  // gap); a timeline that only skips whole intervals has dropped frames.
  for (size_t i = 0; i < gaps.size(); ++i) {
    if (lost(i) == 0 && (gaps[i] < typical - slack || gaps[i] > typical + slack))
      throw Error(path + ": the frame rate changes at frame " + std::to_string(i + 1) + " (a frame interval of " +
                  std::to_string(static_cast<double>(gaps[i]) * tb * 1000.0) + " ms, the video's is " +
                  std::to_string(static_cast<double>(typical) * tb * 1000.0) +
                  " ms): lockstep reads constant-frame-rate video (re-encode with ffmpeg -fps_mode cfr -r RATE)");
  }
  for (size_t i = 0; i < gaps.size(); ++i)
    if (lost(i) > 0)
      throw Error(path + ": " + std::to_string(lost(i)) + " frame(s) missing after frame " + std::to_string(i) +
                  " (counting from 0; its timeline jumps from " + std::to_string(stamps[i]) + " to " +
                  std::to_string(stamps[i + 1]) + " in units of " + std::to_string(c.stream()->time_base.num) + "/" +
                  std::to_string(c.stream()->time_base.den) +
                  " s: dropped frames): frame numbers past it would name other frames than a player shows, so "
                  "every later label would shift (re-encode with ffmpeg -fps_mode cfr -r RATE)");
  return probe;
}

int64_t decode_frames(const std::string& path, int64_t first, int64_t last, const FrameFormat& format,
                      std::vector<uint8_t>* out, const std::vector<bool>* keep) {
  LOCKSTEP_REQUIRE(first >= 0 && last >= first, path + ": bad frame range");
  Container c(path);
  const AVCodecParameters* par = c.stream()->codecpar;
  const AVCodec* codec = avcodec_find_decoder(par->codec_id);
  LOCKSTEP_REQUIRE(codec != nullptr, path + ": no decoder for codec '" + avcodec_get_name(par->codec_id) +
                                         "' in this FFmpeg build");
  std::unique_ptr<AVCodecContext, CodecFreer> dec(avcodec_alloc_context3(codec));
  LOCKSTEP_REQUIRE(dec != nullptr, path + ": out of memory (avcodec_alloc_context3)");
  AV_CHECK(avcodec_parameters_to_context(dec.get(), par), path + ": bad codec parameters");
  dec->thread_count = 1;
  // Damage is refused, not concealed (a damaged MJPEG frame came out half made up, and was
  // imported without a word). An intra-only codec's frames stand alone: any error in the data
  // ends the decode. Other codecs report it per frame, checked on the frames kept below: a
  // file cut mid-GOP (ffmpeg -ss -c copy) starts with frames whose references are gone, and
  // is fine as long as no clip takes them.
  const AVCodecDescriptor* desc = avcodec_descriptor_get(par->codec_id);
  if (desc && (desc->props & AV_CODEC_PROP_INTRA_ONLY)) dec->err_recognition |= AV_EF_EXPLODE | AV_EF_CRCCHECK;
  AV_CHECK(avcodec_open2(dec.get(), codec, nullptr), path + ": cannot open the " + codec->name + " decoder");

  auto pkt = new_packet(path);
  std::unique_ptr<AVFrame, FrameFreer> frame(av_frame_alloc());
  LOCKSTEP_REQUIRE(frame != nullptr, path + ": out of memory (av_frame_alloc)");
  std::unique_ptr<SwsContext, SwsFreer> sws;
  int src_w = 0, src_h = 0, src_fmt = -1, dst_w = 0, dst_h = 0;
  const int planes = format.channels();
  int64_t index = 0;  // frames decoded so far (presentation order)

  // Converts the decoded frame; false once LAST is reached.
  auto take = [&]() -> bool {
    if (index == 0) {
      src_w = frame->width;
      src_h = frame->height;
      src_fmt = frame->format;
      dst_w = format.width > 0 ? format.width : src_w;
      dst_h = format.height > 0 ? format.height : src_h;
      sws.reset(sws_getContext(src_w, src_h, static_cast<AVPixelFormat>(src_fmt), dst_w, dst_h,
                               format.rgb ? AV_PIX_FMT_GBRP : AV_PIX_FMT_GRAY8, SWS_AREA, nullptr, nullptr, nullptr));
      LOCKSTEP_REQUIRE(sws != nullptr, path + ": cannot convert " +
                                           av_get_pix_fmt_name(static_cast<AVPixelFormat>(src_fmt)) + " frames");
      {
        // YUV to RGB with the frame's own matrix (BT.709 for most HD cameras), and to gray
        // too with the frame's own range: libswscale assumes BT.601 limited range otherwise,
        // and stretched a full-range video's levels (30 became 16) in gray alone.
        // sws_getCoefficients maps a value it does not know to its default.
        const int space = raw_enum(frame->colorspace);
        const int full = raw_enum(frame->color_range) == AVCOL_RANGE_JPEG ? 1 : 0;
        int* in_coef = nullptr;
        int* out_coef = nullptr;
        int in_full = 0, out_full = 0, brightness = 0, contrast = 0, saturation = 0;
        if (sws_getColorspaceDetails(sws.get(), &in_coef, &in_full, &out_coef, &out_full, &brightness, &contrast,
                                     &saturation) >= 0)
          sws_setColorspaceDetails(sws.get(), sws_getCoefficients(space == AVCOL_SPC_UNSPECIFIED ? SWS_CS_DEFAULT : space),
                                   full || in_full, out_coef, out_full, brightness, contrast, saturation);
      }
    } else if (frame->width != src_w || frame->height != src_h || frame->format != src_fmt) {
      const auto fmt_name = [](int f) {
        const char* n = av_get_pix_fmt_name(static_cast<AVPixelFormat>(f));
        return std::string(n ? n : "?");
      };
      throw Error(path + ": frame " + std::to_string(index) + " is " + std::to_string(frame->width) + "x" +
                  std::to_string(frame->height) + " " + fmt_name(frame->format) + ", the video started at " +
                  std::to_string(src_w) + "x" + std::to_string(src_h) + " " + fmt_name(src_fmt) +
                  " (the frame size or pixel format changes mid-file)");
    }
    if (index >= first && (!keep || (*keep)[static_cast<size_t>(index - first)])) {
      const size_t plane = static_cast<size_t>(dst_w) * static_cast<size_t>(dst_h);
      const size_t at = out->size();
      out->resize(at + plane * static_cast<size_t>(planes));
      uint8_t* base = out->data() + at;
      // GBRP's planes are G, B, R: point them at the R, G, B slots of the output.
      uint8_t* dst[4] = {format.rgb ? base + plane : base, base + 2 * plane, base, nullptr};
      int stride[4] = {dst_w, dst_w, dst_w, 0};
      const int rows = sws_scale(sws.get(), frame->data, frame->linesize, 0, src_h, dst, stride);
      LOCKSTEP_REQUIRE(rows == dst_h, path + ": cannot convert frame " + std::to_string(index));
    }
    ++index;
    return index <= last;
  };
  // Drains the decoder; false once LAST is reached.
  auto drain = [&]() -> bool {
    for (;;) {
      const int rc = avcodec_receive_frame(dec.get(), frame.get());
      if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return true;
      AV_CHECK(rc, path + ": cannot decode frame " + std::to_string(index));
      // A kept frame the decoder concealed (parts of it guessed) is not the frame that was filmed.
      const bool kept = index >= first && index <= last && (!keep || (*keep)[static_cast<size_t>(index - first)]);
      if (kept && ((frame->flags & AV_FRAME_FLAG_CORRUPT) || frame->decode_error_flags))
        throw Error(path + ": frame " + std::to_string(index) + " is damaged (the " + codec->name +
                    " decoder reports errors in it; its picture would be partly made up): label other frames, "
                    "or re-encode or replace the file");
      const bool more = take();
      av_frame_unref(frame.get());
      if (!more) return false;
    }
  };
  bool more = true;
  while (more) {
    const int rc = av_read_frame(c.get(), pkt.get());
    if (rc == AVERROR_EOF) break;
    AV_CHECK(rc, path + ": read error at frame " + std::to_string(index) + " (truncated file?)");
    if (pkt->stream_index == c.index()) {
      const int sent = avcodec_send_packet(dec.get(), pkt.get());
      av_packet_unref(pkt.get());
      AV_CHECK(sent, path + ": corrupt data at frame " + std::to_string(index));
      more = drain();
    } else {
      av_packet_unref(pkt.get());
    }
  }
  if (more) {  // end of file: flush the decoder's delayed frames
    AV_CHECK(avcodec_send_packet(dec.get(), nullptr), path + ": cannot flush the decoder");
    more = drain();
  }
  LOCKSTEP_REQUIRE(!more, path + ": decodes to " + std::to_string(index) + " frames, but frame " + std::to_string(last) +
                              " is needed (truncated or damaged file?)");
  return index;
}

}  // namespace lockstep::io
