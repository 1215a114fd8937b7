// Fuzz target: safetensors files (io/records/safetensors), and writing back what was read.
#include "fuzz_input.hpp"
#include "io/records/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const std::string path = fuzz::write_input("model.safetensors", data, size);
  fuzz::expect_handled([&] {
    const io::SafeTensors st = io::read_safetensors(path);
    io::write_safetensors(fuzz::work_dir() + "/again.safetensors", st);
    io::read_safetensors(fuzz::work_dir() + "/again.safetensors");
  });
  return 0;
}
