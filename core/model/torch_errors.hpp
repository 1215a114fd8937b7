// torch_errors: LibTorch reports errors as c10::Error with a multi-line backtrace;
// lockstep reports one line per error, so the commands run their body through
// with_torch_errors, which rethrows torch errors as lockstep::Error without it.
#pragma once

#include <c10/util/Exception.h>

#include <string>

#include "core/base/error.hpp"

namespace lockstep {

template <typename F>
int with_torch_errors(F&& body) {
  try {
    return body();
  } catch (const c10::Error& e) {
    throw Error(std::string("LibTorch: ") + e.what_without_backtrace());
  }
}

}  // namespace lockstep
