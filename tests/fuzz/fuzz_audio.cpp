// Fuzz target: the audio importer (io/import/audio_import). The first input byte picks
// what the rest is: even, an audio manifest (its lines may name good.wav, a valid 0.1 s
// clip this target writes, or x.wav); odd, the bytes of x.wav, named by a fixed manifest.
// Then the import's sources are opened and every sample read, as `lockstep shard` would.
#include <cstring>
#include <vector>

#include "fuzz_input.hpp"
#include "io/import/audio_import.hpp"

namespace {

// A 16 kHz mono 16-bit WAV of N samples (a ramp), as bytes.
std::vector<uint8_t> wav(uint32_t n) {
  std::vector<uint8_t> b(44 + 2 * n);
  const auto put32 = [&](size_t at, uint32_t v) { std::memcpy(&b[at], &v, 4); };
  const auto put16 = [&](size_t at, uint16_t v) { std::memcpy(&b[at], &v, 2); };
  std::memcpy(&b[0], "RIFF", 4);
  put32(4, 36 + 2 * n);
  std::memcpy(&b[8], "WAVEfmt ", 8);
  put32(16, 16);
  put16(20, 1);
  put16(22, 1);
  put32(24, 16000);
  put32(28, 32000);
  put16(32, 2);
  put16(34, 16);
  std::memcpy(&b[36], "data", 4);
  put32(40, 2 * n);
  for (uint32_t i = 0; i < n; ++i) put16(44 + 2 * i, static_cast<uint16_t>(i * 37));
  return b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  static const bool good = [] {
    const auto b = wav(1600);
    fuzz::write_input("good.wav", b.data(), b.size());
    return true;
  }();
  (void)good;
  if (size == 0) return 0;
  std::string manifest;
  if (data[0] % 2 == 0) {
    manifest = fuzz::write_input("train.tsv", data + 1, size - 1);
  } else {
    fuzz::write_input("x.wav", data + 1, size - 1);
    const std::string text = "good.wav\tone two\tspk1\nx.wav\tthree\tspk2\n";
    manifest = fuzz::write_input("train.tsv", reinterpret_cast<const uint8_t*>(text.data()), text.size());
  }
  fuzz::expect_handled([&] {
    std::vector<std::string> files;
    const bool labeled = (data[0] & 2) == 0;  // bit 1: `--no-labels` (PATH lines, no targets)
    const auto inputs = io::open_audio({{"train", manifest}}, false, labeled, &files);
    for (const auto& in : inputs) {
      std::vector<unsigned char> buf(in.source->spec().sample_bytes() * static_cast<size_t>(in.source->count()));
      in.source->read(0, in.source->count(), buf.data());
    }
  });
  return 0;
}
