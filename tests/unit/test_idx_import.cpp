// The IDX importer on small synthetic IDX files (raw and gzip), and its error paths.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>

#include "io/file_util.hpp"
#include "io/idx_import.hpp"
#include "io/shard_reader.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::io;
using namespace lockstep::testing;

namespace {

std::string idx_bytes(const std::vector<int>& dims, const std::vector<unsigned char>& data) {
  std::string out{0, 0, 0x08, static_cast<char>(dims.size())};
  for (const int d : dims)
    for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<char>((d >> shift) & 0xff));
  out.append(data.begin(), data.end());
  return out;
}

void write_raw(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

// N images of 3x2 and labels i % 4; train as .gz, t10k raw.
std::string make_idx_dir(int n_train, int n_test) {
  const std::string dir = fresh_dir("idx");
  for (const auto& [stem, n] : {std::pair<std::string, int>{"train", n_train}, {"t10k", n_test}}) {
    std::vector<unsigned char> img(static_cast<size_t>(n) * 6), lab(static_cast<size_t>(n));
    for (size_t i = 0; i < img.size(); ++i) img[i] = static_cast<unsigned char>(i % 256);
    for (int i = 0; i < n; ++i) lab[static_cast<size_t>(i)] = static_cast<unsigned char>(i % 4);
    if (stem == "train") {
      write_gz(dir + "/train-images-idx3-ubyte.gz", idx_bytes({n, 3, 2}, img));
      write_gz(dir + "/train-labels-idx1-ubyte.gz", idx_bytes({n}, lab));
    } else {
      write_raw(dir + "/t10k-images-idx3-ubyte", idx_bytes({n, 3, 2}, img));
      write_raw(dir + "/t10k-labels-idx1-ubyte", idx_bytes({n}, lab));
    }
  }
  return dir;
}

}  // namespace

TEST(IdxImport, ImportsBothSplitsWithStats) {
  const std::string in = make_idx_dir(40, 12);
  ImportOptions opt;
  opt.input_dir = in;
  opt.output_dir = fresh_dir("out");
  opt.shards = 2;
  opt.name = "toy";
  const ImportResult r = import_idx(opt);
  EXPECT_FALSE(r.skipped);
  const Manifest m = read_manifest(opt.output_dir);
  EXPECT_EQ(m.spec.sample_shape, (std::vector<int64_t>{1, 3, 2}));
  EXPECT_EQ(m.spec.num_classes, 4);
  EXPECT_EQ(m.split("train", opt.output_dir).count(), 40);
  EXPECT_EQ(m.split("test", opt.output_dir).count(), 12);
  ASSERT_EQ(m.spec.mean.size(), 1u);
  EXPECT_GT(m.spec.std[0], 0.0);
  EXPECT_EQ(verify_dataset(opt.output_dir).size(), 4u);
}

TEST(IdxImport, SecondRunIsSkippedUnlessInputOrOptionsChange) {
  const std::string in = make_idx_dir(20, 8);
  ImportOptions opt;
  opt.input_dir = in;
  opt.output_dir = fresh_dir("out");
  EXPECT_FALSE(import_idx(opt).skipped);
  EXPECT_TRUE(import_idx(opt).skipped);
  opt.shards = 2;  // other options: redo, and the old shard files go away
  EXPECT_FALSE(import_idx(opt).skipped);
  for (const auto& f : list_dir(opt.output_dir)) EXPECT_EQ(f.find("-of-00001"), std::string::npos) << f;
  opt.force = true;
  EXPECT_FALSE(import_idx(opt).skipped);
}

TEST(IdxImport, LimitAndClassNames) {
  const std::string in = make_idx_dir(40, 12);
  ImportOptions opt;
  opt.input_dir = in;
  opt.output_dir = fresh_dir("out");
  opt.limit = 10;
  opt.class_names = {"a", "b", "c", "d"};
  import_idx(opt);
  const Manifest m = read_manifest(opt.output_dir);
  EXPECT_EQ(m.split("train", opt.output_dir).count(), 10);
  EXPECT_EQ(m.split("test", opt.output_dir).count(), 10);
  EXPECT_EQ(m.spec.class_names[3], "d");
}

TEST(IdxImport, Errors) {
  ImportOptions opt;
  opt.output_dir = fresh_dir("out");
  opt.input_dir = fresh_dir("empty-in");
  EXPECT_ERROR_CONTAINS(import_idx(opt), "no train-images-idx3-ubyte");
  opt.input_dir = "/nonexistent/idx";
  EXPECT_ERROR_CONTAINS(import_idx(opt), "is not a directory");

  const std::string in = make_idx_dir(10, 4);
  opt.input_dir = in;
  opt.class_names = {"only", "two"};
  EXPECT_ERROR_CONTAINS(import_idx(opt), "label 3 but only 2 class names");

  write_raw(in + "/t10k-labels-idx1-ubyte", idx_bytes({5}, {0, 1, 2, 3, 0}));
  opt.class_names.clear();
  EXPECT_ERROR_CONTAINS(import_idx(opt), "has 4 images but");

  std::string truncated = idx_bytes({10, 3, 2}, std::vector<unsigned char>(30));
  write_raw(in + "/t10k-images-idx3-ubyte", truncated);
  EXPECT_ERROR_CONTAINS(read_idx(in + "/t10k-images-idx3-ubyte"), "truncated IDX data");
  write_raw(in + "/t10k-images-idx3-ubyte", "\x01\x02\x08\x03");
  EXPECT_ERROR_CONTAINS(read_idx(in + "/t10k-images-idx3-ubyte"), "bad magic");
}
