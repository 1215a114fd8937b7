// Fuzz target: image files (io/import/image_decoder: libjpeg-turbo and libpng behind
// lockstep's error handling — longjmp turned into lockstep::Error, EXIF parsing, CMYK and
// orientation), then the importer's transforms (image_transform: resize, crop, channels).
#include <vector>

#include "fuzz_input.hpp"
#include "io/import/image_decoder.hpp"
#include "io/import/image_transform.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  fuzz::expect_handled([&] {
    io::Image im = io::decode_image(data, size, "fuzz.img");
    if (static_cast<int64_t>(im.height) * im.width > (1 << 22)) return;  // a big valid image: decoding was the test
    const io::Image fitted = io::fit_image(io::to_channels(std::move(im), 3), 7, 5);
    std::vector<uint8_t> chw(static_cast<size_t>(fitted.height) * fitted.width * fitted.channels);
    io::store_chw(fitted, chw.data());
  });
  return 0;
}
