// checks: see checks.hpp.
#include "core/dist/checks.hpp"

#include <mpi.h>

#include "core/base/error.hpp"

namespace lockstep {

void check_failed(const char* library, const char* call, const std::string& error, const char* file, int line) {
  throw_at(std::string(library) + " call " + call + " failed: " + error +
               (std::string(library) == "NCCL" ? kNcclNext : ""),
           file, line);
}

std::string mpi_error_text(int rc) {
  char msg[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return std::string(msg, static_cast<size_t>(len));
}

}  // namespace lockstep
