// The images: importer's pixel path on synthetic images: fit (resize + centre crop), the
// channel conversions and the CHW layout; refusals of what is not an image. Decoding real
// JPEG/PNG files against PIL (EXIF, CMYK, 16-bit, palettes, resize against torchvision):
// tests/e2e/images.sh.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/base/error.hpp"
#include "io/import/image_decoder.hpp"
#include "io/import/image_transform.hpp"

using namespace lockstep;
using namespace lockstep::io;

namespace {

Image make(int h, int w, int c, const std::function<uint8_t(int, int, int)>& value) {
  Image im;
  im.height = h;
  im.width = w;
  im.channels = c;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) im.pixels.push_back(value(y, x, k));
  return im;
}

}  // namespace

TEST(ImageTransform, AnImageOfTheTargetSizeIsStoredUntouched) {
  const Image in = make(5, 7, 3, [](int y, int x, int k) { return static_cast<uint8_t>(y * 31 + x * 7 + k); });
  const Image out = fit_image(in, 5, 7);
  EXPECT_EQ(out.pixels, in.pixels);
}

TEST(ImageTransform, ShrinkingAveragesAndKeepsConstants) {
  const Image flat = fit_image(make(40, 60, 1, [](int, int, int) { return uint8_t{77}; }), 8, 8);
  EXPECT_EQ(flat.height, 8);
  EXPECT_EQ(flat.width, 8);
  for (const uint8_t v : flat.pixels) EXPECT_EQ(v, 77);
  // A 2x2 checkerboard of 0/200 blocks, halved: the widened triangle filter reaches into
  // the next block, as PIL's resize((2, 2), BILINEAR) does: [[49, 151], [151, 49]] there too.
  const Image blocks = make(4, 4, 1, [](int y, int x, int) { return static_cast<uint8_t>(((y / 2 + x / 2) % 2) * 200); });
  const Image half = fit_image(blocks, 2, 2);
  EXPECT_EQ(half.pixels, (std::vector<uint8_t>{49, 151, 151, 49}));
}

TEST(ImageTransform, TheLongerSideIsCroppedAtTheCentre) {
  // 4 rows x 8 columns, column x has value 10x: the shorter side already fits (4), so no
  // resampling; the crop keeps columns 2..5.
  const Image in = make(4, 8, 1, [](int, int x, int) { return static_cast<uint8_t>(10 * x); });
  const Image out = fit_image(in, 4, 4);
  EXPECT_EQ(out.pixels, (std::vector<uint8_t>{20, 30, 40, 50, 20, 30, 40, 50, 20, 30, 40, 50, 20, 30, 40, 50}));
  // 4 x 5 to 4 x 4: an odd margin of 1 rounds half to even (torchvision's CenterCrop): left 0.
  const Image odd = fit_image(make(4, 5, 1, [](int, int x, int) { return static_cast<uint8_t>(x); }), 4, 4);
  EXPECT_EQ(odd.pixels[0], 0);
}

TEST(ImageTransform, ChannelsAndLayout) {
  const Image gray = make(1, 2, 1, [](int, int x, int) { return static_cast<uint8_t>(x ? 9 : 200); });
  EXPECT_EQ(to_channels(gray, 3).pixels, (std::vector<uint8_t>{200, 200, 200, 9, 9, 9}));
  const Image rgb = make(1, 3, 3, [](int, int x, int k) { return static_cast<uint8_t>(x == k ? 255 : 0); });
  EXPECT_EQ(to_channels(rgb, 1).pixels, (std::vector<uint8_t>{76, 150, 29}));  // PIL's L of pure R, G, B
  std::vector<uint8_t> chw(9);
  store_chw(rgb, chw.data());
  EXPECT_EQ(chw, (std::vector<uint8_t>{255, 0, 0, 0, 255, 0, 0, 0, 255}));
}

TEST(ImageDecoder, RefusesWhatIsNotAnImageNamingTheFile) {
  const auto refuse = [](const std::string& bytes) {
    try {
      decode_image(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), "x/cat.jpg");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(refuse("hello, not an image"), "x/cat.jpg: neither a JPEG nor a PNG (by its first bytes)");
  EXPECT_EQ(refuse("").find("neither"), 11u);
  EXPECT_NE(refuse(std::string("\xFF\xD8\xFF\xE0", 4) + std::string(40, '\0')).find("x/cat.jpg: not a readable JPEG"),
            std::string::npos);
  EXPECT_NE(refuse(std::string("\x89PNG\r\n\x1a\n", 8) + std::string(10, '\0')).find("x/cat.jpg: not a readable PNG"),
            std::string::npos);
  EXPECT_TRUE(looks_like_image(reinterpret_cast<const unsigned char*>("\x89PNG\r\n\x1a\n"), 8));
  EXPECT_FALSE(looks_like_image(reinterpret_cast<const unsigned char*>("GIF89a"), 6));
}
