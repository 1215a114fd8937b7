// bucket_plan: how parameters are grouped into gradient buckets. A pure function of the
// parameter sizes, tested in one process.
//
// Like DDP: parameters are taken in reverse registration order (the order autograd
// produces their gradients), the first bucket is capped at 1 MiB so communication starts
// early, later buckets at CAP bytes. A parameter larger than the cap gets a bucket of its
// own. CAP <= 0 puts every parameter in its own bucket (bucketing off).
#pragma once

#include <cstddef>
#include <vector>

namespace lockstep {

struct Bucket {
  std::vector<size_t> params;   // indices into the registration-order parameter list
  std::vector<size_t> offsets;  // element offset of each parameter in the flat buffer
  size_t elems = 0;
};

inline constexpr double kFirstBucketMb = 1.0;

std::vector<Bucket> plan_buckets(const std::vector<size_t>& numel, size_t elem_bytes, double cap_mb,
                                 double first_cap_mb = kFirstBucketMb);

}  // namespace lockstep
