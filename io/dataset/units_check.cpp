// units_check: see units_check.hpp.
#include "io/dataset/units_check.hpp"

#include <fmt/format.h>

namespace lockstep::io {

std::string units_mismatch(const std::vector<double>& ref_std, const std::vector<double>& data_std,
                           const std::string& data_what, const std::string& ref_what) {
  if (ref_std.empty() || ref_std.size() != data_std.size()) return "";
  size_t varying = 0, wider = 0, narrower = 0, first = 0;
  for (size_t c = 0; c < ref_std.size(); ++c) {
    if (ref_std[c] == 1.0 || data_std[c] == 1.0) continue;  // a constant channel's stored std
    if (varying++ == 0) first = c;
    wider += data_std[c] > kUnitsFactor * ref_std[c];
    narrower += data_std[c] * kUnitsFactor < ref_std[c];
  }
  if (varying == 0 || (wider < varying && narrower < varying)) return "";
  const double d = data_std[first], r = ref_std[first];
  return fmt::format("{} spread {:.3g} (std of channel {}) where {} spread {:.3g}, {:.3g}x {} in every channel that "
                     "varies",
                     data_what, d, first, ref_what, r, wider ? d / r : r / d, wider ? "wider" : "narrower");
}

}  // namespace lockstep::io
