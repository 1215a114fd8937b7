// bucket_plan: see bucket_plan.hpp.
#include "core/dist/bucket_plan.hpp"

namespace lockstep {

std::vector<Bucket> plan_buckets(const std::vector<size_t>& numel, size_t elem_bytes, double cap_mb,
                                 double first_cap_mb) {
  std::vector<Bucket> out;
  const double mib = 1024.0 * 1024.0;
  Bucket cur;
  for (size_t k = numel.size(); k-- > 0;) {
    const double cap = (out.empty() ? std::min(first_cap_mb, cap_mb) : cap_mb) * mib;
    const double bytes = static_cast<double>((cur.elems + numel[k]) * elem_bytes);
    if (!cur.params.empty() && (cap_mb <= 0 || bytes > cap)) {
      out.push_back(std::move(cur));
      cur = Bucket{};
    }
    cur.params.push_back(k);
    cur.offsets.push_back(cur.elems);
    cur.elems += numel[k];
  }
  if (!cur.params.empty()) out.push_back(std::move(cur));
  return out;
}

}  // namespace lockstep
