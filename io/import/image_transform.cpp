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

// The window [TOP, TOP+HEIGHT) x [LEFT, LEFT+WIDTH) of IN resized to OH x OW, computed only
// there (a centre crop throws away what a whole resize computes beyond it), horizontal pass
// first. Each output value sums the same taps in the same order as a whole resize would, so
// the window is that resize's crop bit for bit; the loops run along contiguous pixels and
// each input row is converted to float once.
Image resize_window(const Image& in, int oh, int ow, int top, int left, int height, int width) {
  const int c = in.channels;
  const std::vector<Taps> tx = triangle_taps(in.width, ow), ty = triangle_taps(in.height, oh);
  int r0 = in.height, r1 = 0;  // the input rows the window's vertical taps read
  for (int y = top; y < top + height; ++y) {
    const Taps& t = ty[static_cast<size_t>(y)];
    r0 = std::min(r0, t.first);
    r1 = std::max(r1, t.first + static_cast<int>(t.w.size()));
  }
  const size_t mrow = static_cast<size_t>(width) * c;
  std::vector<float> mid(static_cast<size_t>(std::max(r1 - r0, 0)) * mrow), src(static_cast<size_t>(in.width) * c);
  for (int y = r0; y < r1; ++y) {
    const uint8_t* p = &in.pixels[static_cast<size_t>(y) * in.width * c];
    for (size_t i = 0; i < src.size(); ++i) src[i] = p[i];
    float* m = &mid[static_cast<size_t>(y - r0) * mrow];
    for (int x = 0; x < width; ++x) {
      const Taps& t = tx[static_cast<size_t>(left + x)];
      float* acc = m + static_cast<size_t>(x) * c;
      for (size_t j = 0; j < t.w.size(); ++j) {
        const float w = t.w[j];
        const float* px = &src[(static_cast<size_t>(t.first) + j) * c];
        for (int k = 0; k < c; ++k) acc[k] += w * px[k];
      }
    }
  }
  Image out;
  out.height = height;
  out.width = width;
  out.channels = c;
  out.pixels.resize(static_cast<size_t>(height) * mrow);
  std::vector<float> acc(mrow);
  for (int y = 0; y < height; ++y) {
    const Taps& t = ty[static_cast<size_t>(top + y)];
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (size_t j = 0; j < t.w.size(); ++j) {
      const float w = t.w[j];
      const float* m = &mid[(static_cast<size_t>(t.first - r0) + j) * mrow];
      for (size_t i = 0; i < mrow; ++i) acc[i] += w * m[i];
    }
    uint8_t* o = &out.pixels[static_cast<size_t>(y) * mrow];
    for (size_t i = 0; i < mrow; ++i) o[i] = to_byte(acc[i]);
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
  const int top = half_even((oh - height) / 2.0), left = half_even((ow - width) / 2.0);
  if (oh != in.height || ow != in.width) return resize_window(in, oh, ow, top, left, height, width);
  const Image& scaled = in;  // no resize: the crop alone
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
