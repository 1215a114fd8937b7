// mpi_tuning: see mpi_tuning.hpp.
#include "core/dist/mpi_tuning.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/base/error.hpp"
#include "io/util/file_util.hpp"

extern char** environ;

namespace lockstep {

std::string ring_allreduce_rules() {
  // Format: collectives; collective id (allreduce = 2); communicator sizes; per size: the
  // size (applies to communicators at least this large), message rules, then per rule:
  // bytes from which it applies, algorithm (0: Open MPI's fixed decision, 4: ring),
  // fan-in/out, segment size.
  const std::vector<int> sizes{2, 8, 16, 32, 64, 128, 256, 512, 1024};
  std::string s = "1\n2\n" + std::to_string(sizes.size()) + "\n";
  for (const int n : sizes) {
    const long ring_from = std::max(256L << 10, static_cast<long>(n) * (64L << 10));
    s += std::to_string(n) + "\n2\n0 0 0 0\n" + std::to_string(ring_from) + " 4 0 0\n";
  }
  return s;
}

std::string prefer_ring_allreduce() {
#ifdef OPEN_MPI
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "OMPI_MCA_coll_tuned_", 20) == 0) return "";  // the user's settings win
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp && *tmp ? tmp : "/tmp";
  const std::string text = ring_allreduce_rules();
  const std::string path = dir + "/lockstep-allreduce-rules-" + std::to_string(getuid()) + ".conf";
  try {  // every rank of a node may get here at once: each writes the same text atomically
    if (!io::path_exists(path) || io::read_text_file(path) != text) io::write_file_atomic(path, text);
  } catch (const Error&) {
    return "";  // no rules file: Open MPI decides as it always does
  }
  setenv("OMPI_MCA_coll_tuned_use_dynamic_rules", "1", 0);
  setenv("OMPI_MCA_coll_tuned_dynamic_rules_filename", path.c_str(), 0);
  return path;
#else
  return "";
#endif
}

}  // namespace lockstep
