// Fuzz target: checkpoint files (io/records/checkpoint_store: the header, sizes and CRC),
// and the JSON metadata they carry (io/util/json_io). Half the inputs are raw files; the
// other half become the metadata of a checkpoint written with a correct CRC, so the
// mutations reach the metadata parser instead of stopping at the checksum, and the
// write/read round trip must give back exactly what was written.
#include <cstdlib>

#include "fuzz_input.hpp"
#include "io/records/checkpoint_store.hpp"
#include "io/util/json_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  if (size > 0 && (data[0] & 1)) {
    const std::string meta(reinterpret_cast<const char*>(data) + 1, size - 1);
    const std::string path = fuzz::work_dir() + "/valid.ckpt";
    io::write_checkpoint_file(path, meta, "payload");
    const io::CheckpointData back = io::read_checkpoint(path);
    if (back.meta_json != meta || back.payload != "payload" || io::read_checkpoint_meta(path) != meta) std::abort();
    fuzz::expect_handled([&] { io::parse_json(back.meta_json, path); });
    return 0;
  }
  const std::string path = fuzz::write_input("step-000000001.ckpt", data, size);
  fuzz::expect_handled([&] {
    const io::CheckpointData d = io::read_checkpoint(path);
    io::parse_json(d.meta_json, path);
  });
  fuzz::expect_handled([] { io::find_latest_valid_checkpoint(fuzz::work_dir(), nullptr); });
  return 0;
}
