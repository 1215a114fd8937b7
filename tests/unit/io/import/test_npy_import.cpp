// The NumPy importer's .npy side on hand-written files: the header parser (versions, keys,
// every refusal by name), element conversion (byte orders, widths), the Fortran reorder,
// and the source (labels, ranges in and out of order, truncation). The .npz side and files
// written by NumPy itself: tests/e2e/arrays.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>

#include "core/base/error.hpp"
#include "io/import/npy_format.hpp"
#include "io/import/import_spec.hpp"
#include "io/import/npy_import.hpp"
#include "io/import/sample_source.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::io;
using namespace lockstep::testing;

namespace {

// A version-1.0 .npy: preamble, DICT padded to a multiple of 64 bytes, then DATA.
std::string npy(const std::string& dict, const std::string& data, int major = 1) {
  const size_t pre = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((pre + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const size_t len = header.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (major > 1) out += std::string(2, '\0');
  return out + header + data;
}

std::string dict(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
}

template <typename T>
std::string bytes_of(const std::vector<T>& v, bool big_endian = false) {
  std::string out(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  if (big_endian)
    for (size_t i = 0; i < v.size(); ++i) std::reverse(out.begin() + i * sizeof(T), out.begin() + (i + 1) * sizeof(T));
  return out;
}

NpyHeader header_of(const std::string& file) {
  return parse_npy_header(reinterpret_cast<const unsigned char*>(file.data()), file.size(), "x.npy");
}

std::string write(const std::string& dir, const std::string& name, const std::string& bytes) {
  const std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(NpyFormat, ParsesTheHeaderOfEveryVersion) {
  for (const int major : {1, 2, 3}) {
    const NpyHeader h = header_of(npy(dict("<f4", "(3, 28, 28)"), "", major));
    EXPECT_EQ(h.kind, 'f');
    EXPECT_EQ(h.item_bytes, 4);
    EXPECT_FALSE(h.big_endian);
    EXPECT_FALSE(h.fortran_order);
    EXPECT_EQ(h.shape, (std::vector<int64_t>{3, 28, 28}));
    EXPECT_EQ(h.data_offset % 64, 0);
    EXPECT_EQ(h.count(), 3 * 28 * 28);
  }
  const NpyHeader h = header_of(npy("{'shape': (5,), 'fortran_order': True, 'descr': '>i2'}", ""));
  EXPECT_TRUE(h.big_endian && h.fortran_order);
  EXPECT_EQ(h.shape, std::vector<int64_t>{5});
  EXPECT_EQ(header_of(npy(dict("<i8", "(7L, 2L)"), "")).shape, (std::vector<int64_t>{7, 2}));  // Python 2
  EXPECT_EQ(header_of(npy(dict("|u1", "()"), "")).count(), 1);
}

TEST(NpyFormat, RefusesWhatItDoesNotReadByName) {
  const auto refuse = [](const std::string& file) {
    return error_of([&] { header_of(file); });
  };
  EXPECT_NE(refuse(npy(dict("|O", "(3,)"), "")).find("pickled Python objects"), std::string::npos);
  EXPECT_NE(refuse(npy(dict("<U5", "(3,)"), "")).find("strings"), std::string::npos);
  EXPECT_NE(refuse(npy(dict("<c8", "(3,)"), "")).find("complex"), std::string::npos);
  EXPECT_NE(refuse(npy(dict("<M8[ns]", "(3,)"), "")).find("dates"), std::string::npos);
  EXPECT_NE(refuse(npy(dict("<f16", "(3,)"), "")).find("not one lockstep reads"), std::string::npos);
  EXPECT_NE(refuse(npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", "")).find("structured"),
            std::string::npos);
  EXPECT_NE(refuse(npy("{'descr': '<f4', 'shape': (3,), }", "")).find("all required"), std::string::npos);
  EXPECT_NE(refuse(npy(dict("<f4", "(3,)") + "x", "")).find("after the closing"), std::string::npos);
  EXPECT_NE(refuse(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'extra': 1}", "")).find("'extra'"),
            std::string::npos);
  EXPECT_NE(refuse(npy(dict("<f4", "(1099511627776, 2)"), "")).find("2^40"), std::string::npos);
  EXPECT_NE(refuse(npy(dict("<f4", "(3, -1)"), "")).find("non-negative integer"), std::string::npos);
  EXPECT_NE(refuse(std::string("\x80\x04\x95", 3) + std::string(20, 'x')).find("pickle"), std::string::npos);
  EXPECT_NE(refuse("PK\x03\x04" + std::string(20, 'x')).find("no \\x93NUMPY magic"), std::string::npos);
  std::string v9 = npy(dict("<f4", "(3,)"), "");
  v9[6] = 9;
  EXPECT_NE(refuse(v9).find("version 9.0"), std::string::npos);
  const std::string full = npy(dict("<f4", "(3,)"), "");
  EXPECT_NE(refuse(full.substr(0, 40)).find("truncated"), std::string::npos);
}

TEST(NpyFormat, ConvertsEveryByteOrderAndWidthToTheStoredType) {
  const auto convert = [](const std::string& descr, const std::string& data, int64_t n, DType want) {
    const NpyHeader h = header_of(npy(dict(descr, "(" + std::to_string(n) + ",)"), ""));
    EXPECT_EQ(npy_store_dtype(h), want) << descr;
    std::vector<unsigned char> out(static_cast<size_t>(n) * dtype_size(want));
    npy_convert(h, reinterpret_cast<const unsigned char*>(data.data()), n, want, out.data());
    return out;
  };
  const auto as_float = [](const std::vector<unsigned char>& b) {
    std::vector<float> f(b.size() / 4);
    std::memcpy(f.data(), b.data(), b.size());
    return f;
  };
  const auto as_i16 = [](const std::vector<unsigned char>& b) {
    std::vector<int16_t> v(b.size() / 2);
    std::memcpy(v.data(), b.data(), b.size());
    return v;
  };
  EXPECT_EQ(as_i16(convert(">i2", bytes_of<int16_t>({-300, 7, 299}, true), 3, DType::kInt16)),
            (std::vector<int16_t>{-300, 7, 299}));
  EXPECT_EQ(as_i16(convert("|i1", bytes_of<int8_t>({-128, 5, 127}), 3, DType::kInt16)),
            (std::vector<int16_t>{-128, 5, 127}));
  EXPECT_EQ(as_float(convert("<f8", bytes_of<double>({0.5, -2.25}), 2, DType::kFloat32)),
            (std::vector<float>{0.5f, -2.25f}));
  EXPECT_EQ(as_float(convert(">f4", bytes_of<float>({1.5f, -3.0f}, true), 2, DType::kFloat32)),
            (std::vector<float>{1.5f, -3.0f}));
  EXPECT_EQ(as_float(convert("<u2", bytes_of<uint16_t>({65535, 1}), 2, DType::kFloat32)),
            (std::vector<float>{65535.0f, 1.0f}));
  EXPECT_EQ(as_float(convert(">i8", bytes_of<int64_t>({-5, 1 << 20}, true), 2, DType::kFloat32)),
            (std::vector<float>{-5.0f, 1048576.0f}));
  EXPECT_EQ(as_float(convert("<u4", bytes_of<uint32_t>({4000000000u}), 1, DType::kFloat32)),
            (std::vector<float>{4e9f}));
  EXPECT_EQ(convert("|b1", std::string("\x01\x00\x01", 3), 3, DType::kUInt8), (std::vector<unsigned char>{1, 0, 1}));
  EXPECT_EQ(as_i16(convert(">f2", bytes_of<uint16_t>({0x3c00}, true), 1, DType::kFloat16)),
            (std::vector<int16_t>{0x3c00}));  // 1.0 in half precision, bits kept
}

TEST(NpyFormat, LabelsMustBeIntegers) {
  std::vector<int64_t> out(2);
  const NpyHeader f = header_of(npy(dict("<f8", "(2,)"), ""));
  EXPECT_NE(error_of([&] { npy_to_int64(f, nullptr, 2, out.data(), "y.npy"); }).find("labels must be integers"),
            std::string::npos);
  const NpyHeader u = header_of(npy(dict(">u8", "(2,)"), ""));
  const std::string data = bytes_of<uint64_t>({3, ~uint64_t{0}}, true);
  npy_to_int64(u, reinterpret_cast<const unsigned char*>(data.data()), 2, out.data(), "y.npy");
  EXPECT_EQ(out, (std::vector<int64_t>{3, -1}));  // beyond int64: negative, refused by the range check
}

TEST(NpyFormat, FortranOrderBecomesCOrder) {
  // a = [[0, 1, 2], [3, 4, 5]] (2 x 3); Fortran order stores columns: 0 3 1 4 2 5.
  NpyHeader h = header_of(npy(dict("|u1", "(2, 3)", true), ""));
  std::vector<unsigned char> data{0, 3, 1, 4, 2, 5};
  npy_fortran_to_c(h, &data);
  EXPECT_EQ(data, (std::vector<unsigned char>{0, 1, 2, 3, 4, 5}));
  // 2 x 2 x 2 of int16: element (i, j, k) = 100i + 10j + k.
  h = header_of(npy(dict("<i2", "(2, 2, 2)", true), ""));
  std::vector<int16_t> f;
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < 2; ++j)
      for (int i = 0; i < 2; ++i) f.push_back(static_cast<int16_t>(100 * i + 10 * j + k));
  std::vector<unsigned char> raw(f.size() * 2);
  std::memcpy(raw.data(), f.data(), raw.size());
  npy_fortran_to_c(h, &raw);
  std::vector<int16_t> c(f.size());
  std::memcpy(c.data(), raw.data(), raw.size());
  EXPECT_EQ(c, (std::vector<int16_t>{0, 1, 10, 11, 100, 101, 110, 111}));
}

TEST(NpyImport, ReadsSamplesAndLabelsInAndOutOfOrder) {
  const std::string dir = fresh_dir("npy");
  std::vector<float> x(5 * 2 * 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.5f;
  const std::string xs = write(dir, "x.npy", npy(dict(">f4", "(5, 2, 3)"), bytes_of(x, true), 2));
  const std::string ys = write(dir, "y.npy", npy(dict("<i8", "(5, 1)"), bytes_of<int64_t>({0, 3, 1, 3, 2})));
  std::vector<std::string> files;
  auto splits = open_npy({{"train", xs + "," + ys}}, false, {}, &files);
  EXPECT_EQ(files, (std::vector<std::string>{xs, ys}));
  SampleSource& s = *splits.at(0).source;
  EXPECT_TRUE(splits[0].with_val);
  EXPECT_EQ(s.count(), 5);
  EXPECT_EQ(s.spec().sample_shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(s.spec().dtype, DType::kFloat32);
  EXPECT_EQ(s.spec().num_classes, 4);
  EXPECT_TRUE(s.spec().labeled);
  EXPECT_EQ(s.labels(), (std::vector<int64_t>{0, 3, 1, 3, 2}));
  std::vector<float> got(12);
  for (const int64_t begin : {3, 0, 1}) {  // 3 then back to 0: the stream starts again
    s.read(begin, 2, got.data());
    for (size_t k = 0; k < 12; ++k) EXPECT_EQ(got[k], x[static_cast<size_t>(begin) * 6 + k]) << begin;
  }
  // A lone file: unlabelled.
  files.clear();
  auto alone = open_npy({{"test", xs}}, false, {}, &files);
  EXPECT_FALSE(alone.at(0).source->spec().labeled);
  EXPECT_FALSE(alone[0].with_val);
}

TEST(NpyImport, FortranSamplesReadAsC) {
  const std::string dir = fresh_dir("npyf");
  // 3 samples of 2 values: rows [1 2] [3 4] [5 6]; Fortran order stores 1 3 5 2 4 6.
  const std::string xs = write(dir, "x.npy", npy(dict("|u1", "(3, 2)", true), std::string("\1\3\5\2\4\6", 6)));
  std::vector<std::string> files;
  auto splits = open_npy({{"train", xs}}, false, {}, &files);
  std::vector<unsigned char> got(6);
  splits.at(0).source->read(0, 3, got.data());
  EXPECT_EQ(got, (std::vector<unsigned char>{1, 2, 3, 4, 5, 6}));
}

TEST(NpyImport, BadInputIsRefusedNamingTheFile) {
  const std::string dir = fresh_dir("npybad");
  const std::string xs = write(dir, "x.npy", npy(dict("|u1", "(4, 2)"), std::string(8, '\1')));
  const auto open = [&](const std::string& labels_bytes) {
    const std::string ys = write(dir, "y.npy", labels_bytes);
    std::vector<std::string> files;
    return error_of([&] { open_npy({{"train", xs + "," + ys}}, false, {}, &files); });
  };
  EXPECT_NE(open(npy(dict("<i4", "(4,)"), bytes_of<int32_t>({0, 1, -1, 2}))).find("y.npy: label out of range at index 2"),
            std::string::npos);
  EXPECT_NE(open(npy(dict("<i4", "(3,)"), bytes_of<int32_t>({0, 1, 2}))).find("not one label per sample"),
            std::string::npos);
  EXPECT_NE(open(npy(dict("<f4", "(4,)"), bytes_of<float>({0, 1, 2, 3}))).find("labels must be integers"),
            std::string::npos);
  EXPECT_NE(open(npy(dict("<i4", "(4,)"), bytes_of<int32_t>({0, 1}))).find("y.npy: truncated"), std::string::npos);
  std::vector<std::string> files;
  const std::string short_x = write(dir, "short.npy", npy(dict("<f4", "(4, 2)"), std::string(12, '\0')));
  EXPECT_NE(error_of([&] { open_npy({{"train", short_x}}, false, {}, &files); }).find("short.npy: truncated"),
            std::string::npos);
  EXPECT_NE(error_of([&] { open_npy({{"train", dir + "/none.npy"}}, false, {}, &files); }).find("does not exist"),
            std::string::npos);
  const std::string empty = write(dir, "empty.npy", npy(dict("<f4", "(0, 2)"), ""));
  EXPECT_NE(error_of([&] { open_npy({{"train", empty}}, false, {}, &files); }).find("no samples"), std::string::npos);
  EXPECT_NE(error_of([&] { open_npy({{"train", dir + "/x.npz:a,b"}}, true, {}, &files); }).find("does not exist"),
            std::string::npos);
  EXPECT_NE(error_of([&] { open_npy({{"train", xs}}, true, {}, &files); }).find("not a readable .npz"),
            std::string::npos);
}

TEST(NpyImport, SampleShapeReshapesWithoutMovingAByte) {
  const std::string dir = fresh_dir("npyshape");
  std::vector<uint8_t> px(2 * 4 * 6);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i);
  const std::string xs = write(dir, "x.npy", npy(dict("|u1", "(2, 4, 6)"), bytes_of(px)));
  std::vector<std::string> files;
  auto splits = open_npy({{"train", xs}}, false, {}, &files);
  auto shaped = reshape_samples(std::move(splits.at(0).source), {1, 4, 6});
  EXPECT_EQ(shaped->spec().sample_shape, (std::vector<int64_t>{1, 4, 6}));
  std::vector<uint8_t> got(px.size());
  shaped->read(0, 2, got.data());
  EXPECT_EQ(got, px);
  auto again = open_npy({{"train", xs}}, false, {}, &files);
  EXPECT_THROW(reshape_samples(std::move(again.at(0).source), {3, 4, 6}), UsageError);
}

TEST(NpyImport, ChannelsLastSamplesAreStoredChannelsFirst) {
  const std::string dir = fresh_dir("npyhwc");
  // 2 samples of [H=2, W=3, C=2]: value = 100*sample + 10*(h*3+w) + c.
  std::vector<int16_t> hwc;
  for (int n = 0; n < 2; ++n)
    for (int p = 0; p < 6; ++p)
      for (int c = 0; c < 2; ++c) hwc.push_back(static_cast<int16_t>(100 * n + 10 * p + c));
  const std::string xs = write(dir, "x.npy", npy(dict("<i2", "(2, 2, 3, 2)"), bytes_of(hwc)));
  std::vector<std::string> files;
  auto moved = channels_first(std::move(open_npy({{"train", xs}}, false, {}, &files).at(0).source));
  EXPECT_EQ(moved->spec().sample_shape, (std::vector<int64_t>{2, 2, 3}));
  std::vector<int16_t> got(hwc.size());
  moved->read(0, 2, got.data());
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 2; ++c)
      for (int p = 0; p < 6; ++p) EXPECT_EQ(got[static_cast<size_t>(n * 12 + c * 6 + p)], 100 * n + 10 * p + c);
  moved->read(1, 1, got.data());  // a range that starts past sample 0
  EXPECT_EQ(got[1], 110);
  const std::string flat = write(dir, "f.npy", npy(dict("|u1", "(2, 5)"), std::string(10, '\1')));
  EXPECT_ERROR_CONTAINS(channels_first(std::move(open_npy({{"train", flat}}, false, {}, &files).at(0).source)),
                        "have no channel axis to move");
}

TEST(NpyImport, AShapeThatLooksChannelsLastIsRefusedUntilTheLayoutIsSaid) {
  EXPECT_TRUE(looks_channels_last({32, 32, 3}));
  EXPECT_TRUE(looks_channels_last({16, 112, 112, 1}));
  EXPECT_FALSE(looks_channels_last({3, 32, 32}));     // channels first
  EXPECT_FALSE(looks_channels_last({1, 16, 112, 112}));
  EXPECT_FALSE(looks_channels_last({28, 28}));        // no channel axis
  EXPECT_FALSE(looks_channels_last({4, 4, 3}));       // 4x4 of 3: ambiguous, kept
  const std::string dir = fresh_dir("npyhwcspec");
  const std::string xs = write(dir, "x.npy", npy(dict("|u1", "(2, 8, 6, 3)"), std::string(2 * 8 * 6 * 3, '\7')));
  ImportSpec spec;
  spec.input = "npy:" + xs;
  spec.options.plan.val_fraction = 0;
  EXPECT_ERROR_CONTAINS(open_import(spec), xs + ": samples of shape [8,6,3] look channels-last");
  EXPECT_ERROR_CONTAINS(open_import(spec), "pass --layout channels-last to store them as [3,8,6]");
  spec.layout = "channels-first";
  EXPECT_EQ(open_import(spec).inputs.at(0).source->spec().sample_shape, (std::vector<int64_t>{8, 6, 3}));
  spec.layout = "channels-last";
  EXPECT_EQ(open_import(spec).inputs.at(0).source->spec().sample_shape, (std::vector<int64_t>{3, 8, 6}));
  spec.layout = "nhwc";
  EXPECT_ERROR_CONTAINS(open_import(spec), "--layout must be channels-first or channels-last, not 'nhwc'");
  spec.layout = "channels-last";
  spec.input = "idx:" + dir;
  EXPECT_ERROR_CONTAINS(open_import(spec), "--layout is for npy:, npz: and hdf5: arrays");
}
