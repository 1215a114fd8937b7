// Fuzz target: CSV/text inputs (io/import/csv_import), as rows and as windowed time series.
#include "fuzz_input.hpp"
#include "io/import/csv_import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const std::string path = fuzz::write_input("data.csv", data, size);
  for (const int64_t window : {0, 4}) {
    fuzz::expect_handled([&] {
      io::CsvOptions opt;
      opt.window = window;
      opt.stride = window / 2;
      std::vector<std::string> names;
      const auto inputs = io::open_csv({{"train", path}}, opt, &names);
      for (const auto& in : inputs) {
        std::vector<unsigned char> buf(in.source->spec().sample_bytes() * static_cast<size_t>(in.source->count()));
        in.source->read(0, in.source->count(), buf.data());
      }
    });
  }
  return 0;
}
