// preflight: see preflight.hpp.
#include "core/dist/preflight.hpp"

#include <cstdint>

#include "core/base/error.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/dist/watchdog.hpp"

namespace lockstep {

void preflight_check(const MpiRuntime& mpi, const Fingerprint& fields) {
  const int n = static_cast<int>(fields.size()), world = mpi.size();
  std::vector<uint64_t> mine;
  for (const auto& [name, content] : fields) mine.push_back(fnv1a64(content));
  std::vector<uint64_t> all(static_cast<size_t>(n) * static_cast<size_t>(world));
  {
    Watchdog::Scope watch(mpi.watchdog(), "pre-flight MPI_Allgather");
    MPI_CHECK(MPI_Allgather(mine.data(), n, MPI_UINT64_T, all.data(), n, MPI_UINT64_T, mpi.comm()));
  }
  for (int f = 0; f < n; ++f) {
    std::string ranks;
    for (int r = 1; r < world; ++r)
      if (all[static_cast<size_t>(r * n + f)] != all[static_cast<size_t>(f)]) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    if (!ranks.empty())
      throw UsageError("pre-flight check failed: " + fields[static_cast<size_t>(f)].first + " differs on rank(s) " + ranks +
                       " from rank 0 (same binary, options and data on every rank?)");
  }
}

}  // namespace lockstep
