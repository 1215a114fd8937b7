// Fuzz target: manifest.json (io/dataset/shard_format: read_manifest).
#include "fuzz_input.hpp"
#include "io/dataset/shard_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  fuzz::write_input("manifest.json", data, size);
  fuzz::expect_handled([] {
    const io::Manifest m = io::read_manifest(fuzz::work_dir());
    io::manifest_to_json(m);  // what was accepted can be written back
  });
  return 0;
}
