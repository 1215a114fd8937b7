// Fuzz target: the video importer (io/import/video_import, video_decoder over FFmpeg). The
// first input byte picks what the rest is: even, a label CSV (its rows may name good.mkv, a
// valid 5-frame clip this target makes with the ffmpeg CLI when it is installed, or
// x.mkv); odd, the bytes of x.mkv (any container: FFmpeg probes the content), named by a
// fixed CSV. Then the sources are opened and every clip read, as `lockstep shard` would.
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "io/import/video_import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  static const bool good = [] {
    const std::string path = fuzz::work_dir() + "/good.mkv";
    return std::system(("ffmpeg -v quiet -y -f lavfi -i testsrc=size=16x16:rate=25 -frames:v 5 -c:v ffv1 " + path +
                        " >/dev/null 2>&1").c_str()) == 0;
  }();
  (void)good;
  if (size == 0) return 0;
  std::string csv;
  if (data[0] % 2 == 0) {
    csv = fuzz::write_input("train.csv", data + 1, size - 1);
  } else {
    fuzz::write_input("x.mkv", data + 1, size - 1);
    const std::string text = "video,trial,frame,label\nx.mkv,t1,0,a\nx.mkv,t1,2,b\nx.mkv,t2,4,a\n";
    csv = fuzz::write_input("train.csv", reinterpret_cast<const uint8_t*>(text.data()), text.size());
  }
  fuzz::expect_handled([&] {
    io::VideoOptions opt;
    opt.clip_frames = 3;
    opt.height = opt.width = 8;
    opt.threads = 1;
    opt.labeled = (data[0] & 2) == 0;  // bit 1: `--no-labels` (no label column needed; no frame column: every frame)
    std::vector<std::string> names, files;
    const auto inputs = io::open_video({{"train", csv}}, opt, {}, &names, &files);
    for (const auto& in : inputs) {
      std::vector<unsigned char> buf(in.source->spec().sample_bytes() * static_cast<size_t>(in.source->count()));
      in.source->read(0, in.source->count(), buf.data());
    }
  });
  return 0;
}
