// error: see error.hpp.
#include "core/base/error.hpp"

#include <cstring>

namespace lockstep {

[[noreturn]] void throw_at(const std::string& what, const char* file, int line) {
  // Keep the path short: "core/x.cpp" rather than the build machine's absolute path.
  const char* short_file = file;
  for (const char* marker : {"/core/", "/io/", "/app/", "/tests/"}) {
    if (const char* p = std::strstr(file, marker)) {
      short_file = p + 1;
      break;
    }
  }
  throw Error(what + " (" + short_file + ":" + std::to_string(line) + ")");
}

}  // namespace lockstep
