// log_mel: see log_mel.hpp.
#include "io/import/log_mel.hpp"

#include <cmath>
#include <complex>

#include "core/base/error.hpp"

namespace lockstep::io {
namespace {

constexpr double kPi = 3.14159265358979323846;

double hz_to_mel(double f) { return 2595.0 * std::log10(1.0 + f / 700.0); }
double mel_to_hz(double m) { return 700.0 * (std::pow(10.0, m / 2595.0) - 1.0); }

// In-place iterative radix-2 FFT; A's size is a power of two.
void fft(std::vector<std::complex<double>>& a) {
  const size_t n = a.size();
  for (size_t i = 1, j = 0; i < n; ++i) {
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (size_t len = 2; len <= n; len <<= 1) {
    const double ang = -2.0 * kPi / static_cast<double>(len);
    const std::complex<double> wl(std::cos(ang), std::sin(ang));
    for (size_t i = 0; i < n; i += len) {
      std::complex<double> w(1.0, 0.0);
      for (size_t k = 0; k < len / 2; ++k) {
        const std::complex<double> u = a[i + k], v = a[i + k + len / 2] * w;
        a[i + k] = u + v;
        a[i + k + len / 2] = u - v;
        w *= wl;
      }
    }
  }
}

}  // namespace

LogMel::LogMel(const LogMelOptions& opt) : opt_(opt) {
  LOCKSTEP_REQUIRE(opt.fft >= opt.window && (opt.fft & (opt.fft - 1)) == 0 && opt.hop > 0 && opt.mels > 0,
                   "log-mel: the FFT size must be a power of two >= the window");
  window_.resize(static_cast<size_t>(opt.window));
  for (int i = 0; i < opt.window; ++i) window_[static_cast<size_t>(i)] = 0.5 - 0.5 * std::cos(2.0 * kPi * i / opt.window);
  const int bins = opt.fft / 2 + 1;
  const double lo = hz_to_mel(opt.f_min), hi = hz_to_mel(opt.f_max);
  filters_.resize(static_cast<size_t>(opt.mels));
  for (int m = 0; m < opt.mels; ++m) {
    const double left = mel_to_hz(lo + (hi - lo) * m / (opt.mels + 1));
    const double center = mel_to_hz(lo + (hi - lo) * (m + 1) / (opt.mels + 1));
    const double right = mel_to_hz(lo + (hi - lo) * (m + 2) / (opt.mels + 1));
    for (int b = 0; b < bins; ++b) {
      const double f = static_cast<double>(b) * opt.sample_rate / opt.fft;
      const double w = std::max(0.0, std::min((f - left) / (center - left), (right - f) / (right - center)));
      if (w > 0) filters_[static_cast<size_t>(m)].emplace_back(b, w);
    }
  }
}

int64_t LogMel::frames(int64_t samples) const {
  return samples < opt_.window ? 0 : 1 + (samples - opt_.window) / opt_.hop;
}

void LogMel::compute(const float* wave, int64_t samples, float* out, int64_t stride) const {
  const int64_t n = frames(samples);
  const int bins = opt_.fft / 2 + 1;
  std::vector<std::complex<double>> buf(static_cast<size_t>(opt_.fft));
  std::vector<double> power(static_cast<size_t>(bins));
  for (int64_t t = 0; t < n; ++t) {
    const float* x = wave + t * opt_.hop;
    for (int i = 0; i < opt_.fft; ++i)
      buf[static_cast<size_t>(i)] = i < opt_.window ? x[i] * window_[static_cast<size_t>(i)] : 0.0;
    fft(buf);
    for (int b = 0; b < bins; ++b) power[static_cast<size_t>(b)] = std::norm(buf[static_cast<size_t>(b)]);
    for (int m = 0; m < opt_.mels; ++m) {
      double e = 0.0;
      for (const auto& [b, w] : filters_[static_cast<size_t>(m)]) e += w * power[static_cast<size_t>(b)];
      out[m * stride + t] = static_cast<float>(std::log(e + 1e-6));
    }
  }
}

}  // namespace lockstep::io
