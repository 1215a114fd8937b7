// scaling_model: see scaling_model.hpp.
#include "core/tools/scaling_model.hpp"

#include <algorithm>

#include "core/base/error.hpp"

namespace lockstep {

double RingModel::allreduce_seconds(double n) const {
  if (n <= 1) return 0.0;
  return buckets * 2 * (n - 1) * alpha + 2 * (n - 1) / n * bytes / beta;
}

double RingModel::step_seconds(double n) const {
  const double compute = strong ? t1 / n : t1;
  return compute + (n > 1 ? exposed * allreduce_seconds(n) + overhead : 0.0);
}

double RingModel::efficiency(double n) const {
  const double t = step_seconds(n);
  return strong ? t1 / (n * t) : t1 / t;
}

RingModel calibrate_ring(const AllreduceSample& s, double gradient_bytes, double t1_step, bool strong, int buckets) {
  LOCKSTEP_REQUIRE(s.ranks >= 2, "the all-reduce model needs a timing at 2 or more ranks (lockstep doctor --doctor.out)");
  LOCKSTEP_REQUIRE(s.big_bytes > s.small_bytes && s.big_seconds > 0 && s.small_seconds > 0,
                   "all-reduce timings need two sizes, the larger one slower");
  const double n = s.ranks, k = 2 * (n - 1);
  RingModel m;
  m.bytes = gradient_bytes;
  m.buckets = buckets;
  m.t1 = t1_step;
  m.strong = strong;
  // small = k a + k/n Bs / b,  big = k a + k/n Bb / b: two equations, two unknowns.
  const double dt = std::max(s.big_seconds - s.small_seconds, 1e-12);
  m.beta = k / n * (s.big_bytes - s.small_bytes) / dt;
  m.alpha = std::max(0.0, (s.small_seconds - k / n * s.small_bytes / m.beta) / k);
  return m;
}

void calibrate_exposed(RingModel& m, double n, double measured_step_seconds) {
  const double ar = m.allreduce_seconds(n);
  const double compute = m.strong ? m.t1 / n : m.t1;
  m.exposed = ar > 0 ? std::clamp((measured_step_seconds - compute) / ar, 0.0, 1.0) : 1.0;
  m.overhead = std::max(0.0, measured_step_seconds - compute - ar);
}

}  // namespace lockstep
