// Fuzz target: a shard's HDF5 attributes and dataset types against the manifest's spec
// (io/dataset/shard_reader: ShardFile, read_shard_header). The input chooses the stored
// sample type and shape, the attribute values and the spec the manifest claims; the file
// itself is written by HDF5 (fuzzing HDF5's own file parser is HDF5's business). One input
// in three makes a v3 frame table instead: /frames and /clip_frames of fuzzed shapes, types
// and frame rows (any value, in range or not).
#include <hdf5.h>

#include <cstring>
#include <vector>

#include "fuzz_input.hpp"
#include "io/dataset/shard_reader.hpp"
#include "io/util/h5.hpp"

namespace {

struct Bytes {
  const uint8_t* p;
  size_t n;
  uint8_t next() { return n ? (--n, *p++) : 0; }
  std::string text(size_t max) {
    std::string s;
    for (size_t len = next() % (max + 1); len > 0 && n > 0; --len) s += static_cast<char>(next());
    return s;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  Bytes in{data, size};
  const std::string path = fuzz::work_dir() + "/train-00000-of-00001.h5";
  io::h5_quiet();
  const bool table = in.next() % 3 == 0;
  try {  // making the file is the harness's part: an input it cannot turn into a file is skipped
    io::H5Handle f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    const hsize_t count = in.next() % 5;
    if (table) {
      std::vector<hsize_t> fdims{static_cast<hsize_t>(in.next() % 6)};
      for (int i = in.next() % 2 ? 3 : 1 + in.next() % 4; i > 0; --i) fdims.push_back(1 + in.next() % 3);
      io::H5Handle fs(H5Screate_simple(static_cast<int>(fdims.size()), fdims.data(), nullptr));
      io::H5Handle fr(H5Dcreate2(f.get(), "frames", in.next() % 4 ? H5T_NATIVE_UINT8 : H5T_NATIVE_FLOAT, fs.get(),
                                 H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
      const hsize_t rdims[2] = {in.next() % 4 ? count : count + 1, static_cast<hsize_t>(1 + in.next() % 4)};
      io::H5Handle rs(H5Screate_simple(2, rdims, nullptr));
      io::H5Handle r(H5Dcreate2(f.get(), "clip_frames", in.next() % 4 ? H5T_NATIVE_INT32 : H5T_NATIVE_INT64, rs.get(),
                                H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
      std::vector<int32_t> rows(static_cast<size_t>(rdims[0] * rdims[1]));
      for (int32_t& v : rows) v = static_cast<int8_t>(in.next()) / 8;  // mostly small, some negative
      if (!rows.empty()) H5Dwrite(r.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data());
      io::h5_write_attr_i64(f.get(), "frame_table", {in.next() % 4 ? 1 : 0});
    }
    const int rank = 1 + in.next() % 3;
    std::vector<hsize_t> dims{count};
    for (int i = 0; i < rank; ++i) dims.push_back(in.next() % 4);
    const hid_t types[] = {H5T_NATIVE_UINT8, H5T_NATIVE_INT16, H5T_NATIVE_UINT16, H5T_NATIVE_FLOAT, H5T_NATIVE_DOUBLE,
                           H5T_NATIVE_INT64};
    const hid_t stype = types[in.next() % 6];
    io::H5Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
    io::H5Handle s(H5Dcreate2(f.get(), in.next() % 8 ? "samples" : "images", stype, space.get(), H5P_DEFAULT,
                              H5P_DEFAULT, H5P_DEFAULT));
    const hsize_t ldims = in.next() % 8 ? count : count + 1;
    io::H5Handle lspace(H5Screate_simple(1, &ldims, nullptr));
    io::H5Handle l(H5Dcreate2(f.get(), "labels", in.next() % 4 ? H5T_NATIVE_INT64 : H5T_NATIVE_FLOAT, lspace.get(),
                              H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    if (in.next() % 4) io::h5_write_attr_str(f.get(), "dtype", in.next() % 2 ? "uint8" : in.text(8));
    if (in.next() % 4) io::h5_write_attr_str(f.get(), "dataset_id", in.text(8));
    std::vector<int64_t> shape;
    for (int i = in.next() % 4; i > 0; --i) shape.push_back(static_cast<int8_t>(in.next()));
    for (const char* attr : {"sample_shape", "shard_index", "shard_count", "num_classes", "labeled"})
      if (in.next() % 4) io::h5_write_attr_i64(f.get(), attr, shape);
    for (const char* attr : {"name", "split", "class_names"})
      if (in.next() % 4) io::h5_write_attr_str(f.get(), attr, in.text(16));
    for (const char* attr : {"mean", "std"})
      if (in.next() % 4) io::h5_write_attr_f64(f.get(), attr, {static_cast<double>(in.next())});
  } catch (const lockstep::Error&) {
    return 0;
  }
  io::DatasetSpec spec;
  for (int i = table ? 4 : 1 + in.next() % 3; i > 0; --i) spec.sample_shape.push_back(1 + in.next() % 3);  // as read_manifest allows
  spec.dtype = table ? io::DType::kUInt8 : static_cast<io::DType>(in.next() % 4);
  spec.frame_table = table;
  spec.labeled = in.next() % 4 != 0;
  spec.num_classes = 1 + in.next() % 4;
  io::ShardEntry entry;
  entry.file = "train-00000-of-00001.h5";
  entry.count = in.next() % 5;
  entry.crc32 = in.next();
  entry.frames = table ? in.next() % 6 : 0;
  fuzz::expect_handled([&] {
    io::ShardFile shard(path, spec, &entry, in.next() % 2 ? "" : "abc");
    std::vector<unsigned char> samples(spec.sample_bytes() * static_cast<size_t>(shard.count()) + 1);
    std::vector<int64_t> labels(static_cast<size_t>(shard.count()) + 1);
    shard.read(0, shard.count(), samples.data(), labels.data());
  });
  fuzz::expect_handled([&] { io::read_shard_header(path); });
  return 0;
}
