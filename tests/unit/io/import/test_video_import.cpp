// The video importer on real encoded files (made here with the ffmpeg CLI): decoding
// against the CLI, clip centring and edges, stride, groups, RGB planes, and every refusal
// of bad input (truncated, variable frame rate, size change, bad labels).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include <unistd.h>

#include "io/import/video_decoder.hpp"
#include "io/import/import_spec.hpp"
#include "io/import/video_import.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::io;

namespace {

bool have_ffmpeg() { return std::system("ffmpeg -version >/dev/null 2>&1") == 0; }

void sh(const std::string& cmd) {
  const int rc = std::system(("(" + cmd + ") >/dev/null 2>&1").c_str());
  if (rc != 0) throw Error("command failed: " + cmd);
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// FRAMES frames of W x H gray, frame k uniformly 10*k, losslessly encoded (FFV1): decoded
// values are exact.
void ramp_video(const std::string& path, int frames, int w = 8, int h = 8) {
  const std::string raw = path + ".raw";
  {
    std::ofstream out(raw, std::ios::binary);
    for (int k = 0; k < frames; ++k) out << std::string(static_cast<size_t>(w * h), static_cast<char>(10 * k));
  }
  sh("ffmpeg -v error -y -f rawvideo -pix_fmt gray -s " + std::to_string(w) + "x" + std::to_string(h) +
     " -r 25 -i " + raw + " -c:v ffv1 " + path);
  std::remove(raw.c_str());
}

std::unique_ptr<SampleSource> open_one(const std::string& csv, const VideoOptions& opt,
                                       std::vector<std::string>* names = nullptr) {
  std::vector<std::string> n, files;
  auto inputs = open_video({{"train", csv}}, opt, {}, names ? names : &n, &files);
  return std::move(inputs.at(0).source);
}

std::vector<uint8_t> read_all(SampleSource& src) {
  std::vector<uint8_t> out(static_cast<size_t>(src.count()) * src.spec().sample_bytes());
  src.read(0, src.count(), out.data());
  return out;
}

class VideoImport : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_ffmpeg()) GTEST_SKIP() << "no ffmpeg CLI to make test videos";
    dir_ = lockstep::testing::fresh_dir("video");
  }
  std::string dir_;
};

TEST_F(VideoImport, DecodesLikeTheFfmpegCli) {
  const std::string v = dir_ + "/pattern.mp4";
  sh("ffmpeg -v error -f lavfi -i testsrc=size=64x48:rate=25 -frames:v 30 -c:v libx264 -pix_fmt yuv420p " + v);
  const VideoProbe p = probe_video(v);
  EXPECT_EQ(p.frames, 30);
  EXPECT_EQ(p.width, 64);
  EXPECT_EQ(p.height, 48);
  EXPECT_NEAR(p.fps, 25.0, 1e-6);
  FrameFormat f;
  f.width = 32;
  f.height = 24;
  std::vector<uint8_t> ours;
  EXPECT_EQ(decode_frames(v, 0, 29, f, &ours), 30);
  ASSERT_EQ(ours.size(), 30u * 32 * 24);
  sh("ffmpeg -v error -i " + v + " -vf scale=32:24:flags=area -pix_fmt gray -f rawvideo " + dir_ + "/cli.raw");
  std::ifstream in(dir_ + "/cli.raw", std::ios::binary);
  const std::string cli((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(cli.size(), ours.size());
  int worst = 0;
  for (size_t i = 0; i < ours.size(); ++i) worst = std::max(worst, std::abs(ours[i] - static_cast<uint8_t>(cli[i])));
  EXPECT_LE(worst, 2);
  // A later range is the same frames.
  std::vector<uint8_t> tail;
  EXPECT_EQ(decode_frames(v, 20, 24, f, &tail), 25);
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), ours.begin() + 20 * 32 * 24));
}

TEST_F(VideoImport, ClipsAreCentredOnTheLabelledFrameAndPaddedAtEdges) {
  ramp_video(dir_ + "/a.mkv", 20);
  write_text(dir_ + "/labels.csv", "video,trial,frame,label\na.mkv,t1,0,rest\na.mkv,t1,5,walk\na.mkv,t2,19,rest\n");
  VideoOptions opt;
  opt.clip_frames = 5;
  std::vector<std::string> names;
  auto src = open_one(dir_ + "/labels.csv", opt, &names);
  EXPECT_EQ(names, (std::vector<std::string>{"rest", "walk"}));
  EXPECT_EQ(src->spec().sample_shape, (std::vector<int64_t>{1, 5, 8, 8}));
  ASSERT_EQ(src->count(), 3);
  EXPECT_EQ(src->labels(), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(src->groups(), (std::vector<int64_t>{0, 0, 1}));
  const auto data = read_all(*src);
  const std::vector<std::vector<int>> want{{0, 0, 0, 1, 2}, {3, 4, 5, 6, 7}, {17, 18, 19, 19, 19}};
  for (size_t s = 0; s < 3; ++s)
    for (size_t t = 0; t < 5; ++t) {
      const size_t at = (s * 5 + t) * 64;
      EXPECT_EQ(data[at], 10 * want[s][t]) << "clip " << s << " frame " << t;
      EXPECT_EQ(data[at + 63], 10 * want[s][t]);
    }
  opt.skip_edges = true;
  auto skipped = open_one(dir_ + "/labels.csv", opt);
  EXPECT_EQ(skipped->count(), 1);
  EXPECT_EQ(skipped->labels(), (std::vector<int64_t>{1}));
}

TEST_F(VideoImport, StrideTakesEveryNthLabelledFramePerTrial) {
  ramp_video(dir_ + "/a.mkv", 12);
  std::string csv = "frame,label,video,trial\n";
  for (int f = 0; f < 10; ++f) csv += std::to_string(f) + ",x,a.mkv," + (f < 5 ? "t1" : "t2") + "\n";
  write_text(dir_ + "/labels.csv", csv);
  VideoOptions opt;
  opt.clip_frames = 1;
  opt.clip_stride = 3;
  auto src = open_one(dir_ + "/labels.csv", opt);
  const auto data = read_all(*src);
  ASSERT_EQ(src->count(), 4);  // t1: 0, 3; t2: 5, 8
  const std::vector<int> want{0, 3, 5, 8};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(data[i * 64], 10 * want[i]);
  opt.group_column = "none";
  EXPECT_TRUE(open_one(dir_ + "/labels.csv", opt)->groups().empty());
}

// Unlabelled (--no-labels): no label column needed; a row without a frame column names a
// whole video (every --clip-stride'th frame a clip centre), in the CSV's video order.
TEST_F(VideoImport, UnlabelledRowsNameFramesOrWholeVideos) {
  ramp_video(dir_ + "/a.mkv", 7);
  ramp_video(dir_ + "/b.mkv", 4);
  VideoOptions opt;
  opt.clip_frames = 3;
  opt.labeled = false;
  write_text(dir_ + "/whole.csv", "video\nb.mkv\na.mkv\n");
  std::vector<std::string> names;
  auto whole = open_one(dir_ + "/whole.csv", opt, &names);
  EXPECT_TRUE(names.empty());
  EXPECT_FALSE(whole->spec().labeled);
  EXPECT_EQ(whole->spec().num_classes, 0);
  ASSERT_EQ(whole->count(), 11);  // b's 4 frames, then a's 7
  auto data = read_all(*whole);
  const std::vector<int> centre{0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6};
  for (size_t i = 0; i < centre.size(); ++i) EXPECT_EQ(data[(i * 3 + 1) * 64], 10 * centre[i]) << "clip " << i;
  EXPECT_EQ(data[(3 * 3 + 2) * 64], 30);  // b's last clip: its last frame repeated
  opt.clip_stride = 3;
  EXPECT_EQ(open_one(dir_ + "/whole.csv", opt)->count(), 2 + 3);  // b: 0, 3; a: 0, 3, 6
  opt.clip_stride = 1;
  write_text(dir_ + "/frames.csv", "frame,video,label\n5,a.mkv,\n1,a.mkv,\n");  // labels not read (empty here)
  auto frames = open_one(dir_ + "/frames.csv", opt);
  ASSERT_EQ(frames->count(), 2);
  data = read_all(*frames);
  EXPECT_EQ(data[1 * 64], 10);  // frames ascending within a video
  EXPECT_EQ(data[(3 + 1) * 64], 50);
  write_text(dir_ + "/twice.csv", "video\na.mkv\n./a.mkv\n");
  EXPECT_ERROR_CONTAINS(open_one(dir_ + "/twice.csv", opt), "is listed twice (also on line 2)");
  write_text(dir_ + "/novideo.csv", "frame\n1\n");
  EXPECT_ERROR_CONTAINS(open_one(dir_ + "/novideo.csv", opt), "novideo.csv:1: the header must name the column video");
  opt.labeled = true;
  EXPECT_ERROR_CONTAINS(open_one(dir_ + "/whole.csv", opt), "whole.csv:1: the header must name the columns video, "
                       "frame and label");
  ImportSpec spec;  // --no-labels: no validation split, no class names, not every kind
  spec.input = "video:" + dir_ + "/whole.csv";
  spec.no_labels = true;
  spec.options.plan.val_fraction = 0.2;
  EXPECT_ERROR_CONTAINS(open_import(spec), "is unlabelled, so it has no validation split");
  spec.options.plan.val_fraction = 0;
  spec.class_names = "a,b";
  EXPECT_ERROR_CONTAINS(open_import(spec), "--class-names given with --no-labels");
  spec.class_names.clear();
  spec.input = "idx:" + dir_;
  EXPECT_ERROR_CONTAINS(open_import(spec), "--no-labels is for video:, audio:");
}

// Decoding holds every frame a video's clips use: an import that would hold over half the
// machine's memory is refused before decoding (here: whole videos resized to 8192x8192 RGB).
TEST_F(VideoImport, DecodingMoreThanHalfTheMemoryIsRefusedFirst) {
  const double ram = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGE_SIZE));
  const int frames = static_cast<int>(ram / 2 / (8192.0 * 8192 * 3)) + 8;
  if (frames > 4000) GTEST_SKIP() << "a machine with over 1 TB of memory";
  ramp_video(dir_ + "/long.mkv", frames);
  write_text(dir_ + "/whole.csv", "video\nlong.mkv\n");
  VideoOptions opt;
  opt.clip_frames = 3;
  opt.labeled = false;
  opt.rgb = true;
  opt.height = opt.width = 8192;
  EXPECT_ERROR_CONTAINS(open_one(dir_ + "/whole.csv", opt), "long.mkv: decoding needs ");
  opt.height = opt.width = 8;
  EXPECT_EQ(open_one(dir_ + "/whole.csv", opt)->count(), frames);
}

// Clips far apart in a long video keep only their own frames; the contents stay exact.
TEST_F(VideoImport, DistantClipsKeepOnlyTheirFrames) {
  ramp_video(dir_ + "/long.mkv", 24);
  write_text(dir_ + "/labels.csv", "\xEF\xBB\xBFvideo,frame,label\nlong.mkv,1,a\n./long.mkv,22,b\n");  // BOM, 2 spellings
  VideoOptions opt;
  opt.clip_frames = 3;
  auto src = open_one(dir_ + "/labels.csv", opt);
  ASSERT_EQ(src->count(), 2);
  const auto data = read_all(*src);
  const std::vector<int> want{0, 1, 2, 21, 22, 23};
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(data[i * 64], 10 * want[i]) << i;
  // One file under two spellings is one video: the same frame twice is refused.
  write_text(dir_ + "/labels.csv", "video,frame,label\nlong.mkv,3,a\n./long.mkv,3,b\n");
  EXPECT_ERROR_CONTAINS(open_one(dir_ + "/labels.csv", opt), "labels.csv:3: frame 3 of");
  write_text(dir_ + "/labels.csv", "video,frame,label,frame\nlong.mkv,3,a,4\n");
  EXPECT_ERROR_CONTAINS(open_one(dir_ + "/labels.csv", opt), "the column 'frame' is named twice");
  ImportSpec spec;  // option ranges are checked by open_import, before any file is opened
  spec.input = "video:" + dir_ + "/labels.csv";
  spec.video = opt;
  spec.video.clip_frames = 100000;
  EXPECT_THROW(open_import(spec), UsageError);
}

TEST_F(VideoImport, RgbKeepsThePlanesInOrder) {
  sh("ffmpeg -v error -f lavfi -i color=c=red:size=16x16:rate=25 -frames:v 3 -c:v ffv1 -pix_fmt bgr0 " + dir_ + "/red.mkv");
  write_text(dir_ + "/labels.csv", "video,frame,label\nred.mkv,1,r\n");
  VideoOptions opt;
  opt.clip_frames = 3;
  opt.rgb = true;
  auto src = open_one(dir_ + "/labels.csv", opt);
  EXPECT_EQ(src->spec().sample_shape, (std::vector<int64_t>{3, 3, 16, 16}));
  const auto data = read_all(*src);
  const size_t plane = 3 * 16 * 16;
  EXPECT_GE(data[0], 250);          // R
  EXPECT_LE(data[plane], 5);        // G
  EXPECT_LE(data[2 * plane], 5);    // B
}

// A colour matrix or range number no standard defines (a Matroska Colour element, an MPEG-2
// sequence display extension: copied from the file as is) decodes with the defaults, BT.601
// and limited range; it was loaded as FFmpeg's enum type, undefined behaviour the video
// fuzzer reported (its seed regress-colour-enums.mkv runs it under UBSan on every CI run).
TEST_F(VideoImport, ColourNumbersNoStandardDefinesDecodeWithTheDefaults) {
  const std::string good = dir_ + "/bt601.mkv", odd = dir_ + "/odd.mkv";
  sh("ffmpeg -v error -f lavfi -i testsrc=size=16x16:rate=25 -frames:v 3 -c:v ffv1 -pix_fmt yuv420p "
     "-colorspace bt470bg -color_range tv " + good);
  std::string bytes;
  {
    std::ifstream in(good, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (const char* element : {"\x55\xb1\x81", "\x55\xb9\x81"}) {  // MatrixCoefficients, Range: 1-byte values
    const size_t at = bytes.find(element, 0, 3);
    ASSERT_NE(at, std::string::npos) << "ffmpeg wrote no Colour element";
    bytes[at + 3] = static_cast<char>(200);
  }
  std::ofstream(odd, std::ios::binary) << bytes;
  FrameFormat rgb;
  rgb.rgb = true;
  std::vector<uint8_t> want, got;
  ASSERT_EQ(decode_frames(good, 0, 2, rgb, &want), 3);
  ASSERT_EQ(decode_frames(odd, 0, 2, rgb, &got), 3);
  EXPECT_EQ(got, want);
}

TEST_F(VideoImport, BadLabelsAreRefusedNamingTheLine) {
  ramp_video(dir_ + "/a.mkv", 10);
  ramp_video(dir_ + "/b.mkv", 10);
  const std::string csv = dir_ + "/labels.csv";
  const VideoOptions opt;
  write_text(csv, "video,trial,frame,label\na.mkv,t1,3,x\na.mkv,t1,10,x\n");
  EXPECT_ERROR_CONTAINS(open_one(csv, opt), "a.mkv is past the video's end (it has 10 frames)");
  write_text(csv, "video,trial,frame,label\nmissing.mkv,t1,3,x\n");
  EXPECT_ERROR_CONTAINS(open_one(csv, opt), "labels.csv:2: video");
  EXPECT_ERROR_CONTAINS(open_one(csv, opt), "missing.mkv not found");
  write_text(csv, "video,trial,frame,label\na.mkv,t1,3,x\nb.mkv,t1,4,x\n");
  EXPECT_ERROR_CONTAINS(open_one(csv, opt), "labels.csv:3: trial 't1' is in");
  write_text(csv, "video,trial,frame,label\na.mkv,t1,3,x\na.mkv,t1,3,y\n");
  EXPECT_ERROR_CONTAINS(open_one(csv, opt), "labels.csv:3: frame 3 of");
  write_text(csv, "video,trial,frame,label\na.mkv,t1,-3,x\n");
  EXPECT_ERROR_CONTAINS(open_one(csv, opt), "labels.csv:2: frame '-3' is not a frame index");
  write_text(csv, "video,time,label\na.mkv,3,x\n");
  EXPECT_ERROR_CONTAINS(open_one(csv, opt), "the header must name the columns video, frame and label");
  VideoOptions grouped;
  grouped.group_column = "subject";
  write_text(csv, "video,trial,frame,label\na.mkv,t1,3,x\n");
  EXPECT_ERROR_CONTAINS(open_one(csv, grouped), "no column 'subject'");
  // A test label the training CSV does not have.
  write_text(dir_ + "/test.csv", "video,trial,frame,label\nb.mkv,t9,3,y\n");
  std::vector<std::string> names, files;
  EXPECT_ERROR_CONTAINS(open_video({{"train", csv}, {"test", dir_ + "/test.csv"}}, opt, {}, &names, &files),
                        "test.csv:2: label 'y' is not a class");
}

TEST_F(VideoImport, BrokenVideosAreRefusedNamingTheFileAndFrame) {
  // Truncated: the container opens, the stream ends early.
  ramp_video(dir_ + "/full.mkv", 40, 64, 64);
  sh("head -c $(( $(stat -c %s " + dir_ + "/full.mkv) / 2 )) " + dir_ + "/full.mkv > " + dir_ + "/cut.mkv");
  FrameFormat f;
  std::vector<uint8_t> out;
  EXPECT_ERROR_CONTAINS(decode_frames(dir_ + "/cut.mkv", 0, 39, f, &out), "cut.mkv: decodes to");
  // Not a video at all.
  write_text(dir_ + "/notes.mp4", "not a video\n");
  EXPECT_ERROR_CONTAINS(probe_video(dir_ + "/notes.mp4"), "notes.mp4: cannot open as video");
  // The frame rate changes (25 fps, then 10 fps).
  sh("ffmpeg -v error -f lavfi -i testsrc=size=32x32:rate=25 -frames:v 10 -c:v ffv1 " + dir_ + "/f25.mkv");
  sh("ffmpeg -v error -f lavfi -i testsrc=size=32x32:rate=10 -frames:v 10 -c:v ffv1 " + dir_ + "/f10.mkv");
  sh("ffmpeg -v error -i " + dir_ + "/f25.mkv -i " + dir_ + "/f10.mkv -filter_complex [0:v][1:v]concat=n=2:v=1 "
     "-fps_mode passthrough -c:v ffv1 " + dir_ + "/vfr.mkv");
  EXPECT_ERROR_CONTAINS(probe_video(dir_ + "/vfr.mkv"), "vfr.mkv: the frame rate changes at frame 11 (a frame interval of 100.0");
  // The frame size changes (a raw H.264 stream of 32x32, then 48x48 frames).
  sh("ffmpeg -v error -f lavfi -i testsrc=size=32x32:rate=25 -frames:v 5 -c:v libx264 -f h264 " + dir_ + "/a.h264");
  sh("ffmpeg -v error -f lavfi -i testsrc=size=48x48:rate=25 -frames:v 5 -c:v libx264 -f h264 " + dir_ + "/b.h264");
  sh("cat " + dir_ + "/a.h264 " + dir_ + "/b.h264 > " + dir_ + "/grow.h264");
  EXPECT_ERROR_CONTAINS(decode_frames(dir_ + "/grow.h264", 0, 9, f, &out), "grow.h264: frame 5 is 48x48");
  EXPECT_ERROR_CONTAINS(decode_frames(dir_ + "/grow.h264", 0, 9, f, &out), "the video started at 32x32");
  // A small rate change (40 ms, then 44 ms a frame) is a rate change too.
  sh("ffmpeg -v error -f lavfi -i testsrc=size=16x16:rate=25 -frames:v 20 -vf \"settb=1/1000,setpts='if(lt(N,10),N*40,400+(N-10)*44)'\" "
     "-fps_mode passthrough -c:v ffv1 " + dir_ + "/drift.mkv");
  // (This FFmpeg muxes it as 40 ms steps with one 80 ms jump: refused as a dropped frame.)
  EXPECT_THROW(probe_video(dir_ + "/drift.mkv"), Error);
  // Issue 31 (6), a class: dropped frames (a timeline jump 9 -> 15) imported in decode order
  // from AVI, shifting every later label, while MKV refused them. Now every container's
  // per-frame positions are checked, AVI's frame indices too; B-frames are no jump.
  for (const char* ext : {"avi", "mkv", "mp4"}) {
    const std::string jump = dir_ + "/jump." + ext;
    sh(std::string("ffmpeg -v error -f lavfi -i testsrc=rate=25:size=32x32 -frames:v 20 -vf \"select='not(between(n,10,14))'\" "
                   "-fps_mode passthrough -c:v mjpeg ") + jump);
    EXPECT_ERROR_CONTAINS(probe_video(jump), std::string("jump.") + ext + ": 5 frame(s) missing after frame 9");
  }
  sh("ffmpeg -v error -f lavfi -i testsrc=rate=25:size=32x32 -frames:v 20 -c:v mpeg4 -bf 2 " + dir_ + "/bframes.avi");
  EXPECT_EQ(probe_video(dir_ + "/bframes.avi").frames, 20);
  EXPECT_NEAR(probe_video(dir_ + "/bframes.avi").fps, 25.0, 0.01);
  // A FIFO would block the demuxer: only regular files are read.
  sh("mkfifo " + dir_ + "/pipe.mp4");
  EXPECT_ERROR_CONTAINS(probe_video(dir_ + "/pipe.mp4"), "pipe.mp4: not a regular file");
  // Through the importer: videos of two sizes need --frame-size.
  ramp_video(dir_ + "/small.mkv", 5, 8, 8);
  ramp_video(dir_ + "/big.mkv", 5, 16, 16);
  write_text(dir_ + "/sizes.csv", "video,frame,label\nsmall.mkv,1,x\nbig.mkv,1,x\n");
  VideoOptions opt;
  opt.clip_frames = 1;
  EXPECT_ERROR_CONTAINS(open_one(dir_ + "/sizes.csv", opt), "pass --frame-size HxW");
  parse_frame_size("4x6", &opt);
  EXPECT_EQ(open_one(dir_ + "/sizes.csv", opt)->spec().sample_shape, (std::vector<int64_t>{1, 1, 4, 6}));
  EXPECT_THROW(parse_frame_size("4by6", &opt), UsageError);
}

// helper-41: three false refusals and two silent wrong results, each a class of files.
TEST_F(VideoImport, EveryClockRangeAndDamageIsReadAsFilmedOrRefused) {
  FrameFormat gray;
  std::vector<uint8_t> out;
  // An MPEG program stream stamps a pts on some packets only: one clock (dts) for all, not a
  // mix ("the frame rate changes at frame 1 (a frame interval of 0 ms)" for every .mpg).
  // At 30 fps even its dts repeat and jump: its timeline is not checked, its rate is declared.
  for (const char* rate : {"25", "30"}) {
    sh(std::string("ffmpeg -y -v error -f lavfi -i testsrc=rate=") + rate + ":size=32x32 -frames:v 60 -c:v mpeg2video -bf 2 " +
       dir_ + "/ps.mpg");
    EXPECT_EQ(probe_video(dir_ + "/ps.mpg").frames, 60) << rate;
    EXPECT_NEAR(probe_video(dir_ + "/ps.mpg").fps, std::stod(rate), 0.01);
  }
  // Matroska's millisecond stamps at 750 fps (gaps of 1, 1, 2 ms) were "dropped frames";
  // ten frames really dropped at that rate are still refused.
  sh("ffmpeg -v error -f lavfi -i testsrc=rate=750:size=16x16 -frames:v 60 -c:v ffv1 " + dir_ + "/fast.mkv");
  EXPECT_EQ(probe_video(dir_ + "/fast.mkv").frames, 60);
  EXPECT_NEAR(probe_video(dir_ + "/fast.mkv").fps, 750.0, 750.0 * 0.02);
  sh("ffmpeg -v error -f lavfi -i testsrc=rate=750:size=16x16 -frames:v 60 -vf \"select='not(between(n,20,29))'\" "
     "-fps_mode passthrough -c:v ffv1 " + dir_ + "/fastdrop.mkv");
  EXPECT_ERROR_CONTAINS(probe_video(dir_ + "/fastdrop.mkv"), "fastdrop.mkv: frame 20 is");
  sh("ffmpeg -v error -f lavfi -i testsrc=rate=960:size=16x16 -frames:v 60 -c:v ffv1 " + dir_ + "/f960.mkv");  // 1.04 ms
  EXPECT_NEAR(probe_video(dir_ + "/f960.mkv").fps, 960.0, 960.0 * 0.02);
  // A full-range YUV video read as gray keeps its levels (30 was stretched to 16, in gray only).
  sh("ffmpeg -v error -f lavfi -i color=c=0x1e1e1e:s=16x16:r=25 -frames:v 3 -vf scale=out_range=full "
     "-pix_fmt yuv420p -color_range pc -c:v ffv1 " + dir_ + "/full.mkv");
  ASSERT_EQ(decode_frames(dir_ + "/full.mkv", 0, 2, gray, &out), 3);
  for (const uint8_t v : out) ASSERT_EQ(v, 30);
  // A damaged MJPEG frame was concealed (half made up) and imported without a word.
  sh("ffmpeg -v error -f lavfi -i testsrc=rate=25:size=32x32 -frames:v 20 -c:v mjpeg " + dir_ + "/hit.avi");
  sh("printf AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA | dd of=" + dir_ +
     "/hit.avi bs=1 seek=$(( $(stat -c %s " + dir_ + "/hit.avi) / 2 )) conv=notrunc");
  out.clear();
  EXPECT_ERROR_CONTAINS(decode_frames(dir_ + "/hit.avi", 0, 19, gray, &out), "hit.avi: corrupt data at frame");
  // ... while a file cut mid-GOP (ffmpeg -ss -c copy: its first frames' references are gone)
  // still reads: only an intra-only codec's errors end the decode, others are checked on the
  // frames kept.
  sh("ffmpeg -v error -f lavfi -i testsrc=rate=25:size=64x64 -frames:v 250 -c:v libx264 -x264-params "
     "open-gop=1:keyint=50 -bf 3 " + dir_ + "/og.mp4");
  sh("ffmpeg -v error -ss 4.3 -i " + dir_ + "/og.mp4 -c copy " + dir_ + "/cut.mp4");
  const int64_t cut = probe_video(dir_ + "/cut.mp4").frames;
  out.clear();
  EXPECT_EQ(decode_frames(dir_ + "/cut.mp4", 0, cut - 1, gray, &out), cut);
}

}  // namespace
