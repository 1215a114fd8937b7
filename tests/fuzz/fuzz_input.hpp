// fuzz_input: what every libFuzzer target of lockstep shares — the fuzz input written to
// a file (the parsers under test read files, as lockstep does), and the rule that a
// lockstep::Error is the expected outcome of bad input while anything else (a crash, a
// sanitizer report, another exception such as a bare std::invalid_argument from stoul or
// std::bad_alloc from a size taken on trust) is a finding.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/base/error.hpp"
#include "io/util/file_util.hpp"

namespace lockstep::fuzz {

// A directory of this process for the target's files.
// Never destroyed (a function-local static string would be, before the atexit handler that
// reads it: a use after free under ASan at every normal exit).
inline const std::string& work_dir() {
  static const std::string* const dir = [] {
    auto* d = new std::string("/tmp/lockstep-fuzz-" + std::to_string(::getpid()));
    io::make_dirs(*d);
    std::atexit([] {  // libFuzzer exits through exit(): a crash keeps the directory for a look
      try {
        io::remove_tree(work_dir());
      } catch (const lockstep::Error&) {
      }
    });
    return d;
  }();
  return *dir;
}

inline std::string write_input(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = work_dir() + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || (size > 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
    std::perror(path.c_str());  // the harness, not the input: stop loudly
    std::abort();
  }
  return path;
}

// Runs BODY; a lockstep::Error is bad input handled, anything else escapes to libFuzzer.
template <typename F>
void expect_handled(F&& body) {
  try {
    body();
  } catch (const lockstep::Error&) {
  }
}

}  // namespace lockstep::fuzz
