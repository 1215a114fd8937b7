// preflight: see preflight.hpp.
#include "core/dist/preflight.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <string>

#include "core/base/error.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/dist/watchdog.hpp"

namespace lockstep {

namespace {

// "rank R's line 12: 'lr = 0.1', rank 0's: 'lr = 0.05'" for the first line where MINE
// (rank R's) differs from ZERO (rank 0's); a long line shown around where they part (a
// manifest is one JSON line: its first 80 bytes were alike on both, a hostile finding).
std::string first_difference(const std::string& zero, const std::string& mine, int rank) {
  const auto line_at = [](const std::string& text, size_t at) {
    const size_t begin = text.rfind('\n', at == 0 ? 0 : at - 1);
    const size_t from = begin == std::string::npos || at == 0 ? 0 : begin + 1;
    std::string line = text.substr(from, text.find('\n', from) - from);
    const size_t col = std::min(at - from, line.size()), start = col > 30 ? col - 30 : 0;
    const std::string cut = line.substr(start, 80);
    return (start > 0 ? "..." : "") + cut + (start + 80 < line.size() ? "..." : "");
  };
  size_t i = 0;
  while (i < zero.size() && i < mine.size() && zero[i] == mine[i]) ++i;
  const size_t number = 1 + static_cast<size_t>(std::count(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(i), '\n'));
  return "rank " + std::to_string(rank) + "'s line " + std::to_string(number) + ": '" + line_at(mine, i) +
         "', rank 0's: '" + line_at(zero, i) + "'";
}

}  // namespace

void preflight_check(const MpiRuntime& mpi, const Fingerprint& fields, const std::string& hint) {
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
    int first = 0;
    for (int r = 1; r < world; ++r)
      if (all[static_cast<size_t>(r * n + f)] != all[static_cast<size_t>(f)]) {
        ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
        if (first == 0) first = r;
      }
    if (ranks.empty()) continue;
    // Collective (every rank saw the same gather): where the first differing rank parts from
    // rank 0, so the message names the option, not only "the resolved config".
    const std::string& content = fields[static_cast<size_t>(f)].second;
    std::string where;
    {
      Watchdog::Scope watch(mpi.watchdog(), "pre-flight MPI_Bcast of the differing field");
      const std::string zero = mpi.broadcast_string(mpi.rank() == 0 || mpi.rank() == first ? content : "", 0);
      where = mpi.broadcast_string(mpi.rank() == first ? first_difference(zero, content, first) : "", first);
    }
    throw UsageError("pre-flight check failed: " + fields[static_cast<size_t>(f)].first + " differs on rank(s) " + ranks +
                     " from rank 0 (" + where + "; " + hint + ")");
  }
}

void preflight_read(const MpiRuntime& mpi, const std::string& field, const std::string& hint,
                    const std::function<std::string()>& read) {
  std::string seen;
  std::exception_ptr failed;
  try {
    seen = read();
  } catch (const std::exception& e) {  // any: one rank alone leaving before the collective ends the job unsaid
    failed = std::current_exception();
    seen = std::string("unreadable: ") + e.what();
  }
  preflight_check(mpi, {{field, seen}}, hint);
  if (failed) std::rethrow_exception(failed);
}

}  // namespace lockstep
