// Fuzz target: NumPy input (io/import/npy_import + npy_format: the .npy header parser, the
// element conversion, the Fortran reorder; .npz through libzip). An input starting "PK" is
// an .npz holding 'samples' (and maybe 'labels'); any other a lone .npy (unlabelled). Every
// sample is read, as the importer does.
#include <vector>

#include "fuzz_input.hpp"
#include "io/import/npy_import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const bool npz = size >= 2 && data[0] == 'P' && data[1] == 'K';
  const std::string path = fuzz::write_input(npz ? "arrays.npz" : "samples.npy", data, size);
  fuzz::expect_handled([&] {
    std::vector<std::string> files;
    const std::vector<io::InputSplit> splits = io::open_npy({{"train", path}}, npz, io::NpyKeys{}, &files);
    io::SampleSource& s = *splits.at(0).source;
    std::vector<unsigned char> out(s.spec().sample_bytes());
    for (int64_t i = 0; i < s.count(); ++i) s.read(i, 1, out.data());
  });
  return 0;
}
