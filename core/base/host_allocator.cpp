// host_allocator: see host_allocator.hpp.
#include "core/base/host_allocator.hpp"
#include "core/base/env.hpp"

#include <malloc.h>

#include <cstdlib>

namespace lockstep {

bool configure_host_allocator() {
  if (env::get(env::kMallocMmapThreshold) || env::get(env::kMallocTrimThreshold)) return false;
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1;  // glibc's maximum on 64-bit
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, 256 << 20) == 1;
  return mmap_ok && trim_ok;
}

}  // namespace lockstep
