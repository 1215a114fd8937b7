// Fuzz target: UEA/UCR .ts time-series files (io/import/ts_import), parsed and read back.
#include "fuzz_input.hpp"
#include "io/import/ts_import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const std::string path = fuzz::write_input("data.ts", data, size);
  fuzz::expect_handled([&] {
    std::vector<std::string> names;
    const auto inputs = io::open_ts({{"train", path}, {"test", path}}, &names);
    for (const auto& in : inputs) {
      std::vector<unsigned char> buf(in.source->spec().sample_bytes() * static_cast<size_t>(in.source->count()));
      in.source->read(0, in.source->count(), buf.data());
    }
  });
  return 0;
}
