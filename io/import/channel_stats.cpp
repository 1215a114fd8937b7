// channel_stats: see channel_stats.hpp.
#include "io/import/channel_stats.hpp"

#include <cmath>

#include <algorithm>

namespace lockstep::io {

ChannelStats::ChannelStats(const DatasetSpec& spec)
    : spec_(spec),
      channels_(spec.sample_shape.empty() ? 1 : spec.sample_shape[0]),
      per_channel_(spec.sample_elems() / std::max<int64_t>(1, channels_)),
      sum_(static_cast<size_t>(channels_), 0.0),
      sq_(sum_) {}

void ChannelStats::add(const void* samples, int64_t n, int64_t length) {
  auto value = [&](int64_t idx) -> double {
    switch (spec_.dtype) {
      case DType::kUInt8: return static_cast<const uint8_t*>(samples)[idx];
      case DType::kInt16: return static_cast<const int16_t*>(samples)[idx];
      case DType::kFloat32: return static_cast<const float*>(samples)[idx];
      case DType::kFloat16: return half_to_float(static_cast<const uint16_t*>(samples)[idx]);
    }
    return 0.0;
  };
  // Ragged samples: only the first LENGTH steps of each channel's row are data.
  const int64_t steps = spec_.time_steps();
  const int64_t rows = steps > 0 ? per_channel_ / steps : 0;
  const bool trim = length > 0 && length < steps;
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t c = 0; c < channels_; ++c) {
      const int64_t base = s * spec_.sample_elems() + c * per_channel_;
      double sum = 0.0, sq = 0.0;
      for (int64_t i = 0; i < per_channel_; ++i) {
        if (trim && i % steps >= length) continue;
        const double v = value(base + i);
        sum += v;
        sq += v * v;
      }
      sum_[static_cast<size_t>(c)] += sum;
      sq_[static_cast<size_t>(c)] += sq;
    }
    values_ += trim ? rows * length : per_channel_;
  }
}

void ChannelStats::finish(std::vector<double>* mean, std::vector<double>* std) const {
  mean->assign(static_cast<size_t>(channels_), 0.0);
  std->assign(static_cast<size_t>(channels_), 1.0);
  const double count = static_cast<double>(values_);
  if (count <= 0) return;
  for (size_t c = 0; c < sum_.size(); ++c) {
    (*mean)[c] = sum_[c] / count;
    const double var = sq_[c] / count - (*mean)[c] * (*mean)[c];
    (*std)[c] = var > 1e-12 ? std::sqrt(var) : 1.0;  // constant channel: no division by zero
  }
}

}  // namespace lockstep::io
