// scaling_model: what `lockstep report` predicts beyond the measured ranks. Pure.
//
// Ring all-reduce of B bytes over n ranks (the algorithm NCCL and Open MPI use for large
// buffers): 2(n-1) steps, each a latency alpha plus a chunk of B/n bytes at bandwidth
// beta; a step's gradients go as K buckets, each its own all-reduce:
//     T_ar(n) = K * 2(n-1) * alpha + 2(n-1)/n * B / beta
// B is what goes on the wire: 4 bytes per parameter, 2 under --dist.compress.
// A step at n ranks:  t(n) = t_c(n) + x * T_ar(n) + o   (n >= 2)
//   t_c(n): compute time of a step: t(1) for weak scaling (per-rank batch fixed), t(1)/n
//           for strong scaling (global batch fixed);
//   x:      the share of the all-reduce not hidden behind backward, calibrated at the
//           largest measured n: x = (t(n_max) - t_c(n_max)) / T_ar(n_max), clamped to [0,1];
//   o:      what the measured step at n_max spends beyond compute and the whole all-reduce
//           (synchronisation skew, contention: the rest when x hits 1), held constant.
// alpha and beta are calibrated from two timed all-reduces (small and large) at the
// sweep's largest allocation (`lockstep doctor --doctor.out`), so predictions hold for
// that interconnect. Efficiency: weak t(1)/t(n); strong t(1)/(n t(n)).
// Assumptions: one flat ring (no hierarchy: a ring across nodes is bounded by the slowest
// link), bandwidth independent of n, compute per rank unchanged, no stragglers.
#pragma once

#include <cstdint>
#include <string>

namespace lockstep {

struct AllreduceSample {  // two timed all-reduces at RANKS ranks
  int ranks = 0;
  double small_bytes = 0, small_seconds = 0, big_bytes = 0, big_seconds = 0;
};

struct RingModel {
  double alpha = 0;  // s per ring step
  double beta = 1;   // bytes/s
  double bytes = 0;  // gradient bytes per step (on the wire)
  int buckets = 1;   // all-reduces per step
  double t1 = 0;     // measured step seconds at 1 rank
  double exposed = 1;
  double overhead = 0;  // s per step at n >= 2
  bool strong = false;

  double allreduce_seconds(double n) const;
  double step_seconds(double n) const;
  double efficiency(double n) const;
};

// alpha, beta from SAMPLE (throws Error when it cannot: fewer than 2 ranks, sizes equal).
RingModel calibrate_ring(const AllreduceSample& sample, double gradient_bytes, double t1_step, bool strong,
                         int buckets = 1);
// x and o from a measured step time at N ranks.
void calibrate_exposed(RingModel& m, double n, double measured_step_seconds);

}  // namespace lockstep
