// The IDX importer on small synthetic IDX files (raw and gzip), and its error paths.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>

#include "io/util/file_util.hpp"
#include "io/import/idx_import.hpp"
#include "io/dataset/shard_reader.hpp"
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

ImportResult import_dir(const std::string& in, const std::string& out, PlanOptions plan = {}, bool force = false,
                        std::vector<std::string> class_names = {}) {
  std::vector<std::string> files;
  auto inputs = open_idx(in, &files);
  ImportOptions opt;
  opt.output_dir = out;
  opt.plan = plan;
  opt.force = force;
  opt.class_names = class_names;
  const std::string fp = "test" + file_fingerprint(files) + std::to_string(plan.shards) + std::to_string(plan.limit);
  return run_import(std::move(inputs), opt, "idx:" + in, fp);
}

}  // namespace

TEST(IdxImport, ImportsBothSplitsWithStats) {
  const std::string in = make_idx_dir(40, 12), out = fresh_dir("out");
  PlanOptions plan;
  plan.shards = 2;
  EXPECT_FALSE(import_dir(in, out, plan).skipped);
  const Manifest m = read_manifest(out);
  EXPECT_EQ(m.spec.sample_shape, (std::vector<int64_t>{1, 3, 2}));
  EXPECT_EQ(m.spec.num_classes, 4);
  EXPECT_EQ(m.split("train", out).count(), 40);
  EXPECT_EQ(m.split("test", out).count(), 12);
  ASSERT_EQ(m.spec.mean.size(), 1u);
  EXPECT_GT(m.spec.std[0], 0.0);
  EXPECT_EQ(verify_dataset(out).size(), 4u);
  // Statistics are the train split's, stored in every shard (test shards included).
  EXPECT_EQ(read_shard_header(out + "/test-00000-of-00002.h5").spec.mean, m.spec.mean);
}

TEST(IdxImport, SecondRunIsSkippedUnlessInputOrOptionsChange) {
  const std::string in = make_idx_dir(20, 8), out = fresh_dir("out");
  EXPECT_FALSE(import_dir(in, out).skipped);
  EXPECT_TRUE(import_dir(in, out).skipped);
  PlanOptions two;
  two.shards = 2;  // other options: redo, and the old shard files go away
  EXPECT_FALSE(import_dir(in, out, two).skipped);
  for (const auto& f : list_dir(out)) EXPECT_EQ(f.find("-of-00001"), std::string::npos) << f;
  EXPECT_FALSE(import_dir(in, out, two, /*force=*/true).skipped);
}

TEST(IdxImport, LimitAndClassNames) {
  const std::string in = make_idx_dir(40, 12), out = fresh_dir("out");
  PlanOptions plan;
  plan.limit = 10;
  import_dir(in, out, plan, false, {"a", "b", "c", "d"});
  const Manifest m = read_manifest(out);
  EXPECT_EQ(m.split("train", out).count(), 10);
  EXPECT_EQ(m.split("test", out).count(), 10);
  EXPECT_EQ(m.spec.class_names[3], "d");
}

TEST(IdxImport, Errors) {
  std::vector<std::string> files;
  EXPECT_ERROR_CONTAINS(open_idx(fresh_dir("empty-in"), &files), "no train-images-idx3-ubyte");
  EXPECT_ERROR_CONTAINS(open_idx("/nonexistent/idx", &files), "is not a directory");

  const std::string in = make_idx_dir(10, 4);
  EXPECT_ERROR_CONTAINS(import_dir(in, fresh_dir("out"), {}, false, {"only", "two"}), "--class-names gives 2 names");

  write_raw(in + "/t10k-labels-idx1-ubyte", idx_bytes({5}, {0, 1, 2, 3, 0}));
  EXPECT_ERROR_CONTAINS(open_idx(in, &files), "has 4 images but");

  std::string truncated = idx_bytes({10, 3, 2}, std::vector<unsigned char>(30));
  write_raw(in + "/t10k-images-idx3-ubyte", truncated);
  EXPECT_ERROR_CONTAINS(read_idx(in + "/t10k-images-idx3-ubyte"), "truncated IDX data");
  write_raw(in + "/t10k-images-idx3-ubyte", "\x01\x02\x08\x03");
  EXPECT_ERROR_CONTAINS(read_idx(in + "/t10k-images-idx3-ubyte"), "bad magic");
}
