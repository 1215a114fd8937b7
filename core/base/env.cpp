// env: see env.hpp.
#include "core/base/env.hpp"

#include <cstdlib>

namespace lockstep::env {

const char* get(const char* name) { return std::getenv(name); }

}  // namespace lockstep::env
