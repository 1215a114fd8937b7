// Fuzz target: IDX files (io/import/idx_import: header sizes checked before allocating).
#include "fuzz_input.hpp"
#include "io/import/idx_import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const std::string path = fuzz::write_input("images-idx3-ubyte", data, size);
  fuzz::expect_handled([&] { io::read_idx(path); });
  return 0;
}
