// image_transform: see image_transform.hpp.
#include "io/import/image_transform.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/base/error.hpp"

namespace lockstep::io {
namespace {

// One output position's source taps along an axis: FIRST and normalised weights.
struct Taps {
  int first = 0;
  std::vector<float> w;
};

// PIL's antialiased triangle filter from IN to OUT samples along one axis.
std::vector<Taps> triangle_taps(int in, int out) {
  const double scale = static_cast<double>(in) / out, widen = std::max(scale, 1.0), support = widen;
  std::vector<Taps> taps(static_cast<size_t>(out));
  for (int i = 0; i < out; ++i) {
    const double centre = (i + 0.5) * scale;
    const int lo = std::max(static_cast<int>(centre - support + 0.5), 0);
    const int hi = std::min(static_cast<int>(centre + support + 0.5), in);
    Taps& t = taps[static_cast<size_t>(i)];
    t.first = lo;
    double sum = 0;
    for (int x = lo; x < hi; ++x) {
      const double d = std::abs((x - centre + 0.5) / widen);
      const double v = d < 1.0 ? 1.0 - d : 0.0;
      t.w.push_back(static_cast<float>(v));
      sum += v;
    }
    if (sum > 0)
      for (float& v : t.w) v = static_cast<float>(v / sum);
  }
  return taps;
}

uint8_t to_byte(float v) { return static_cast<uint8_t>(std::clamp(std::floor(v + 0.5f), 0.0f, 255.0f)); }

Image resize(const Image& in, int oh, int ow) {
  const int c = in.channels;
  const std::vector<Taps> tx = triangle_taps(in.width, ow), ty = triangle_taps(in.height, oh);
  std::vector<float> mid(static_cast<size_t>(in.height) * ow * c);  // horizontal pass first
  for (int y = 0; y < in.height; ++y)
    for (int x = 0; x < ow; ++x)
      for (int k = 0; k < c; ++k) {
        const Taps& t = tx[static_cast<size_t>(x)];
        float acc = 0;
        for (size_t j = 0; j < t.w.size(); ++j)
          acc += t.w[j] * in.pixels[(static_cast<size_t>(y) * in.width + t.first + j) * c + k];
        mid[(static_cast<size_t>(y) * ow + x) * c + k] = acc;
      }
  Image out;
  out.height = oh;
  out.width = ow;
  out.channels = c;
  out.pixels.resize(static_cast<size_t>(oh) * ow * c);
  for (int y = 0; y < oh; ++y) {
    const Taps& t = ty[static_cast<size_t>(y)];
    for (int x = 0; x < ow; ++x)
      for (int k = 0; k < c; ++k) {
        float acc = 0;
        for (size_t j = 0; j < t.w.size(); ++j) acc += t.w[j] * mid[((t.first + j) * ow + x) * c + k];
        out.pixels[(static_cast<size_t>(y) * ow + x) * c + k] = to_byte(acc);
      }
  }
  return out;
}

int half_even(double v) { return static_cast<int>(std::nearbyint(v)); }  // default rounding: half to even

}  // namespace

Image fit_image(const Image& in, int height, int width) {
  LOCKSTEP_REQUIRE(height > 0 && width > 0 && in.height > 0 && in.width > 0, "fit_image: empty size");
  if (in.height == height && in.width == width) return in;
  int oh = height, ow = width;
  if (static_cast<double>(height) / in.height >= static_cast<double>(width) / in.width) {
    ow = std::max(width, static_cast<int>(static_cast<int64_t>(height) * in.width / in.height));
  } else {
    oh = std::max(height, static_cast<int>(static_cast<int64_t>(width) * in.height / in.width));
  }
  const Image scaled = oh == in.height && ow == in.width ? in : resize(in, oh, ow);
  const int top = half_even((oh - height) / 2.0), left = half_even((ow - width) / 2.0);
  Image out;
  out.height = height;
  out.width = width;
  out.channels = in.channels;
  out.pixels.resize(static_cast<size_t>(height) * width * in.channels);
  const size_t row = static_cast<size_t>(width) * in.channels;
  for (int y = 0; y < height; ++y)
    std::copy_n(&scaled.pixels[((static_cast<size_t>(top) + y) * ow + left) * in.channels], row,
                &out.pixels[static_cast<size_t>(y) * row]);
  return out;
}

Image to_channels(Image in, int channels) {
  if (in.channels == channels) return in;
  const size_t n = static_cast<size_t>(in.height) * in.width;
  std::vector<uint8_t> px(n * static_cast<size_t>(channels));
  for (size_t i = 0; i < n; ++i) {
    if (channels == 3) {
      px[3 * i] = px[3 * i + 1] = px[3 * i + 2] = in.pixels[i];
    } else {
      const uint8_t* p = &in.pixels[3 * i];
      px[i] = static_cast<uint8_t>((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16);
    }
  }
  in.pixels.swap(px);
  in.channels = channels;
  return in;
}

void store_chw(const Image& im, uint8_t* out) {
  const size_t plane = static_cast<size_t>(im.height) * im.width;
  for (size_t i = 0; i < plane; ++i)
    for (int k = 0; k < im.channels; ++k) out[k * plane + i] = im.pixels[i * im.channels + k];
}

}  // namespace lockstep::io
