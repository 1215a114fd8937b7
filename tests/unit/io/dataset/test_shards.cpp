// Shard files and manifests: round trip, and every bad input named by file.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "io/util/file_util.hpp"
#include "io/util/h5.hpp"
#include "io/import/importer.hpp"
#include "io/loader/sample_store.hpp"
#include "io/dataset/shard_reader.hpp"
#include "io/dataset/shard_writer.hpp"
#include "io/dataset/units_check.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::io;
using namespace lockstep::testing;

TEST(Shards, RoundTripThroughManifestAndRanks) {
  const std::string dir = fresh_dir("rt");
  const Manifest written = write_tiny_dataset(dir, 50, 3);
  const Manifest m = read_manifest(dir);
  EXPECT_EQ(m.spec.sample_shape, written.spec.sample_shape);
  ASSERT_EQ(m.split("train", dir).shards.size(), 3u);
  EXPECT_EQ(m.split("train", dir).count(), 50);
  EXPECT_EQ(m.split("train", dir).shards[0].histogram, (std::vector<int64_t>{6, 5, 5}));

  std::vector<unsigned char> expect;
  std::vector<int64_t> labels;
  tiny_data(m.spec, 50, &expect, &labels);
  // Two ranks together hold every sample exactly once, bytes intact.
  int64_t total = 0;
  for (int r = 0; r < 2; ++r) {
    const SampleStore s = load_rank_samples(dir, m, "train", r, 2);
    total += s.size();
    for (int64_t i = 0; i < s.size(); ++i) EXPECT_EQ(s.raw_labels()[i], s.raw_labels()[i] % 3);
  }
  EXPECT_EQ(total, 50);
  const SampleStore one = load_rank_samples(dir, m, "train", 0, 1);
  ASSERT_EQ(one.size(), 50);
  EXPECT_EQ(std::vector<unsigned char>(one.raw_samples(), one.raw_samples() + expect.size()), expect);
  EXPECT_EQ(verify_dataset(dir).size(), 3u);
}

TEST(Shards, HeaderCarriesTheMetadata) {
  const std::string dir = fresh_dir("hdr");
  write_tiny_dataset(dir, 10, 2);
  const ShardHeader h = read_shard_header(dir + "/train-00001-of-00002.h5");
  EXPECT_EQ(h.split, "train");
  EXPECT_EQ(h.index, 1);
  EXPECT_EQ(h.count_of, 2);
  EXPECT_EQ(h.samples, 5);
  EXPECT_EQ(h.spec.sample_shape, (std::vector<int64_t>{1, 4, 4}));
  EXPECT_EQ(h.spec.mean, (std::vector<double>{10.0}));
}

// A hostile finding: `inspect` of an HDF5 file lockstep did not write said "missing attribute
// 'name'", naming no file. Every attribute read names the file it is in.
TEST(Shards, AFileWithoutShardAttributesIsNamed) {
  const std::string path = fresh_dir("foreign") + "/foreign.h5";
  {
    H5Handle f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  }
  EXPECT_ERROR_CONTAINS(read_shard_header(path), path + ": missing attribute 'name' (not a file lockstep wrote");
}

TEST(Shards, CompressionRoundTrips) {
  const std::string dir = fresh_dir("gz");
  DatasetSpec spec = tiny_spec();
  std::vector<unsigned char> samples;
  std::vector<int64_t> labels;
  tiny_data(spec, 40, &samples, &labels);
  WriteOptions opt;
  opt.compression = 6;
  opt.chunk_samples = 8;
  Manifest m;
  m.spec = spec;
  m.splits.emplace_back("train", write_split(dir, "train", spec, samples.data(), labels.data(), 40, 1, opt));
  write_manifest(dir, m);
  EXPECT_NE(read_shard_header(dir + "/train-00000-of-00001.h5").filters.find("deflate"), std::string::npos);
  const SampleStore s = load_rank_samples(dir, m, "train", 0, 1);
  EXPECT_EQ(std::vector<unsigned char>(s.raw_samples(), s.raw_samples() + samples.size()), samples);
}

TEST(ShardErrors, MissingShard) {
  const std::string dir = fresh_dir("missing");
  const Manifest m = write_tiny_dataset(dir, 20, 2);
  remove_file(dir + "/train-00001-of-00002.h5");
  EXPECT_ERROR_CONTAINS(load_rank_samples(dir, m, "train", 0, 1), "train-00001-of-00002.h5: shard file is missing");
}

TEST(ShardErrors, TruncatedFile) {
  const std::string dir = fresh_dir("trunc");
  const Manifest m = write_tiny_dataset(dir, 20, 1);
  const std::string path = dir + "/train-00000-of-00001.h5";
  ASSERT_EQ(::truncate(path.c_str(), file_size(path) / 2), 0);
  EXPECT_ERROR_CONTAINS(load_rank_samples(dir, m, "train", 0, 1), "train-00000-of-00001.h5");
  EXPECT_ERROR_CONTAINS(verify_dataset(dir), "checksum mismatch");
}

TEST(ShardErrors, NotAnHdf5File) {
  const std::string dir = fresh_dir("nothdf");
  const Manifest m = write_tiny_dataset(dir, 20, 1);
  std::ofstream(dir + "/train-00000-of-00001.h5") << "this is not HDF5";
  EXPECT_ERROR_CONTAINS(load_rank_samples(dir, m, "train", 0, 1), "not an HDF5 file");
}

TEST(ShardErrors, WrongDatasetNames) {
  const std::string dir = fresh_dir("names");
  const Manifest m = write_tiny_dataset(dir, 20, 1);
  const std::string path = dir + "/train-00000-of-00001.h5";
  {
    h5_quiet();
    H5Handle f(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    ASSERT_GE(H5Lmove(f.get(), "samples", f.get(), "images", H5P_DEFAULT, H5P_DEFAULT), 0);
  }
  EXPECT_ERROR_CONTAINS(load_rank_samples(dir, m, "train", 0, 1), "no dataset '/samples'");
}

TEST(ShardErrors, ShapeOrDtypeDiffersFromManifest) {
  const std::string dir = fresh_dir("shape");
  Manifest m = write_tiny_dataset(dir, 20, 1);
  Manifest other = m;
  other.spec.sample_shape = {1, 2, 8};
  EXPECT_ERROR_CONTAINS(load_rank_samples(dir, other, "train", 0, 1), "sample shape [1,4,4] differs");
  other = m;
  other.spec.dtype = DType::kFloat32;
  other.spec.sample_shape = {1, 4, 4};
  EXPECT_ERROR_CONTAINS(ShardFile(dir + "/train-00000-of-00001.h5", other.spec, &m.split("train", dir).shards[0]),
                        "sample dtype uint8 differs");
}

TEST(ShardErrors, CountDiffersFromManifest) {
  const std::string dir = fresh_dir("count");
  const Manifest m = write_tiny_dataset(dir, 20, 1);
  ShardEntry entry = m.split("train", dir).shards[0];
  entry.count = 21;
  EXPECT_ERROR_CONTAINS(ShardFile(dir + "/train-00000-of-00001.h5", m.spec, &entry), "manifest says 21");
}

TEST(ShardErrors, LabelsOutsideClassRange) {
  const std::string dir = fresh_dir("labels");
  const DatasetSpec spec = tiny_spec(3);
  std::vector<unsigned char> samples;
  std::vector<int64_t> labels;
  tiny_data(spec, 10, &samples, &labels);
  labels[7] = 3;
  EXPECT_ERROR_CONTAINS(write_split(dir, "train", spec, samples.data(), labels.data(), 10, 1, {}),
                        "label 3 of sample 7 is outside [0, 3)");
  // Nothing that looks like a shard was left behind.
  EXPECT_TRUE(list_dir(dir).empty());
  // A file whose labels were corrupted after writing is caught by the reader too.
  const Manifest m = write_tiny_dataset(dir, 10, 1);
  const std::string path = dir + "/train-00000-of-00001.h5";
  {
    H5Handle f(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    H5Handle d(H5Dopen2(f.get(), "labels", H5P_DEFAULT));
    const int64_t bad[10] = {0, 1, 2, 0, 1, 2, 0, 9, 2, 0};
    ASSERT_GE(H5Dwrite(d.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, bad), 0);
  }
  EXPECT_ERROR_CONTAINS(load_rank_samples(dir, m, "train", 0, 1), "label 9 of sample 7");
}

TEST(ShardErrors, NanInFloatSamples) {
  const std::string dir = fresh_dir("nan");
  DatasetSpec spec = tiny_spec();
  spec.dtype = DType::kFloat32;
  std::vector<float> samples(10 * 16, 1.0f);
  std::vector<int64_t> labels(10, 0);
  samples[5 * 16 + 3] = std::nanf("");
  EXPECT_ERROR_CONTAINS(write_split(dir, "train", spec, samples.data(), labels.data(), 10, 1, {}),
                        "sample 5 contains NaN or Inf");
  EXPECT_TRUE(list_dir(dir).empty());
}

TEST(ShardErrors, NanIsNamedByItsIndexInTheShard) {
  // write_split appends in slices of 4096: the error must count from the shard's start.
  const std::string dir = fresh_dir("nan-late");
  DatasetSpec spec = tiny_spec();
  spec.dtype = DType::kFloat32;
  std::vector<float> samples(5000 * 16, 1.0f);
  std::vector<int64_t> labels(5000, 0);
  samples[4500 * 16] = INFINITY;
  EXPECT_ERROR_CONTAINS(write_split(dir, "train", spec, samples.data(), labels.data(), 5000, 1, {}),
                        "sample 4500 contains NaN or Inf");
}

TEST(ShardErrors, EmptyShardIsRefused) {
  const std::string dir = fresh_dir("empty");
  const DatasetSpec spec = tiny_spec();
  EXPECT_ERROR_CONTAINS(ShardWriter(dir, "train", 0, 1, spec, 0, {}), "empty shard");
  std::vector<unsigned char> samples(2 * 16);
  std::vector<int64_t> labels(2, 0);
  EXPECT_ERROR_CONTAINS(write_split(dir, "train", spec, samples.data(), labels.data(), 2, 3, {}),
                        "fewer than 3 shards");
}

TEST(ShardErrors, ManifestProblemsNameTheManifest) {
  const std::string dir = fresh_dir("manifest");
  EXPECT_ERROR_CONTAINS(read_manifest(dir + "/nope"), "does not exist");
  EXPECT_ERROR_CONTAINS(read_manifest(dir), "no manifest");
  std::ofstream(dir + "/manifest.json") << "{ not json";
  EXPECT_ERROR_CONTAINS(read_manifest(dir), "manifest.json: not valid JSON");
  write_tiny_dataset(dir, 12, 1);
  std::string text = read_text_file(dir + "/manifest.json");
  std::string shard_edit = text, split_edit = text;
  shard_edit.replace(text.rfind("\"count\":12"), 10, "\"count\":13");  // the shard entry
  std::ofstream(dir + "/manifest.json") << shard_edit;
  EXPECT_ERROR_CONTAINS(read_manifest(dir), "histogram does not match its count");
  split_edit.replace(text.find("\"count\":12"), 10, "\"count\":14");  // the split total
  std::ofstream(dir + "/manifest.json") << split_edit;
  EXPECT_ERROR_CONTAINS(read_manifest(dir), "split 'train' says 14 samples, its shards hold 12");
}

TEST(ShardErrors, UnwritableOutputDir) {
  const std::string dir = fresh_dir("ro");
  std::ofstream(dir + "/file") << "x";
  const DatasetSpec spec = tiny_spec();
  EXPECT_ERROR_CONTAINS(ShardWriter(dir + "/file", "train", 0, 1, spec, 4, {}), "cannot create shard");
  EXPECT_ERROR_CONTAINS(make_dirs(dir + "/file/sub"), "cannot create directory");
}

TEST(ShardWriterTest, AbandonedWriterLeavesNoFile) {
  const std::string dir = fresh_dir("abandon");
  {
    ShardWriter w(dir, "train", 0, 1, tiny_spec(), 4, {});
  }
  EXPECT_TRUE(list_dir(dir).empty());
}

TEST(ShardWriterTest, ChannelStats) {
  DatasetSpec spec = tiny_spec();
  spec.sample_shape = {2, 1, 2};
  const unsigned char data[8] = {0, 2, 10, 10, 4, 6, 10, 10};  // 2 samples x 2 channels x 2
  std::vector<double> mean, std;
  ChannelStats stats(spec);
  stats.add(data, 1);  // streamed in pieces, as the importer does
  stats.add(data + 4, 1);
  stats.finish(&mean, &std);
  EXPECT_DOUBLE_EQ(mean[0], 3.0);
  EXPECT_DOUBLE_EQ(mean[1], 10.0);
  EXPECT_NEAR(std[0], std::sqrt(5.0), 1e-12);
  EXPECT_DOUBLE_EQ(std[1], 1.0);  // constant channel: no division by zero
}

TEST(ShardWriterTest, HalfToFloat) {
  EXPECT_EQ(half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_to_float(0xc000), -2.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(half_to_float(0x7c00)));
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
}

// The manifest records how samples are ordered within shards; older manifests (no field)
// read as source order, and an unknown value is refused naming the manifest.
TEST(Shards, ManifestRecordsTheSampleOrder) {
  const std::string dir = fresh_dir("order");
  Manifest m = write_tiny_dataset(dir, 12, 1);
  EXPECT_EQ(read_manifest(dir).sample_order, SampleOrder::kSource);
  m.sample_order = SampleOrder::kShuffled;
  m.order_seed = 18446744073709551615ull;
  write_manifest(dir, m);
  EXPECT_EQ(read_manifest(dir).sample_order, SampleOrder::kShuffled);
  EXPECT_EQ(read_manifest(dir).order_seed, 18446744073709551615ull);
  std::string text = read_text_file(dir + "/manifest.json");
  std::string old_style = text;
  old_style.replace(old_style.find("\"sample_order\":\"shuffled\","), 26, "");
  std::ofstream(dir + "/manifest.json") << old_style;
  EXPECT_EQ(read_manifest(dir).sample_order, SampleOrder::kSource);
  text.replace(text.find("\"shuffled\""), 10, "\"sorted\"");
  std::ofstream(dir + "/manifest.json") << text;
  EXPECT_ERROR_CONTAINS(read_manifest(dir), "sample_order 'sorted' is neither");
}

// Samples in other units (units_check.hpp): every varying channel 16x off. A constant channel
// carries the std 1.0 the importer stores for it and says nothing (a hostile finding: a model
// with one constant channel let 0-1 data through; blank 0-255 data was refused as 90x off).
TEST(UnitsCheck, EveryVaryingChannelSixteenTimesOff) {
  // Per channel (mean, std): the reference's and the data's.
  using MS = std::vector<std::pair<double, double>>;
  const auto off = [](const MS& ref, const MS& data) {
    std::vector<double> rm, rs, dm, ds;
    for (const auto& [m, s] : ref) rm.push_back(m), rs.push_back(s);
    for (const auto& [m, s] : data) dm.push_back(m), ds.push_back(s);
    return units_mismatch(rm, rs, dm, ds, "data", "the model's");
  };
  EXPECT_NE(off({{73, 90}}, {{0.29, 0.35}}), "");  // pixels 0-255 -> 0-1
  EXPECT_NE(off({{0.29, 0.35}}, {{73, 90}}).find("257x wider in every channel that varies"), std::string::npos);
  EXPECT_EQ(off({{73, 90}}, {{70, 8}}), "");                     // 11x: within the factor
  EXPECT_EQ(off({{73, 90}, {10, 50}}, {{0.29, 0.35}, {10, 50}}), "");  // one channel changed: a sensor
  EXPECT_NE(off({{73, 90}, {0, 1}}, {{0.29, 0.35}, {0, 1}}), "");      // the constant channel left out
  EXPECT_EQ(off({{73, 90}}, {{0, 1}}), "");                      // blank data: no varying channel
  EXPECT_EQ(off({}, {{0.29, 0.35}}), "");                        // a model without statistics
  // A quiet recording: the spread collapses, the mean (gravity) stays: not other units.
  EXPECT_EQ(off({{9.8, 3.0}}, {{9.8, 0.1}}), "");
  EXPECT_NE(off({{73, 90}, {0, 1}}, {{0.29, 0.35}, {0, 1}})
                .find("data spread 0.35 (std of channel 0) where the model's spread 90"),
            std::string::npos);
}
