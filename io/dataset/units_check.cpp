// units_check: see units_check.hpp.
#include "io/dataset/units_check.hpp"

#include <fmt/format.h>

#include <cmath>

namespace lockstep::io {

std::string units_mismatch(const std::vector<double>& ref_mean, const std::vector<double>& ref_std,
                           const std::vector<double>& data_mean, const std::vector<double>& data_std,
                           const std::string& data_what, const std::string& ref_what) {
  const size_t n = ref_std.size();
  if (n == 0 || data_std.size() != n || ref_mean.size() != n || data_mean.size() != n) return "";
  size_t varying = 0, wider = 0, narrower = 0, first = 0;
  for (size_t c = 0; c < n; ++c) {
    if (ref_std[c] == 1.0 || data_std[c] == 1.0) continue;  // a constant channel's stored std
    if (varying++ == 0) first = c;
    const bool scaled = std::abs(data_mean[c] / data_std[c] - ref_mean[c] / ref_std[c]) <= 2.0;
    wider += scaled && data_std[c] > kUnitsFactor * ref_std[c];
    narrower += scaled && data_std[c] * kUnitsFactor < ref_std[c];
  }
  if (varying == 0 || (wider < varying && narrower < varying)) return "";
  const double d = data_std[first], r = ref_std[first];
  return fmt::format("{} spread {:.3g} (std of channel {}) where {} spread {:.3g}, {:.3g}x {} in every channel that "
                     "varies, means scaled alike",
                     data_what, d, first, ref_what, r, wider ? d / r : r / d, wider ? "wider" : "narrower");
}

}  // namespace lockstep::io
