// Shard format v2: ragged samples and sequence targets, through writer, manifest, reader,
// rank stores and the import pipeline; every bad record named by file and sample.
#include <gtest/gtest.h>

#include <algorithm>

#include "io/dataset/shard_reader.hpp"
#include "io/dataset/shard_writer.hpp"
#include "io/import/importer.hpp"
#include "io/loader/epoch_order.hpp"
#include "io/loader/rank_reader.hpp"
#include "io/util/file_util.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::io;
using namespace lockstep::testing;

namespace {

// [2, 6] float32 samples, lengths 1..6, targets of 1..3 tokens out of 4.
DatasetSpec seq_spec() {
  DatasetSpec s;
  s.name = "seq";
  s.sample_shape = {2, 6};
  s.dtype = DType::kFloat32;
  s.labeled = false;
  s.ragged = true;
  s.max_target_length = 3;
  s.tokens = {" ", "a", "b", "c"};
  s.mean = {0.0, 0.0};
  s.std = {1.0, 1.0};
  return s;
}

// N samples: sample i has length 1 + i % 6 (value i+1 in its valid steps, 0 after) and
// target [i % 4, (i+1) % 4] (2 tokens) or [i % 4] (odd i).
void seq_data(const DatasetSpec& s, int64_t n, std::vector<unsigned char>* bytes, std::vector<int64_t>* records) {
  std::vector<float> v(static_cast<size_t>(n * s.sample_elems()), 0.0f);
  records->clear();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = 1 + i % 6;
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t t = 0; t < len; ++t) v[static_cast<size_t>(i * 12 + c * 6 + t)] = static_cast<float>(i + 1);
    records->insert(records->end(), {-1, len, i % 4, i % 2 ? -1 : (i + 1) % 4, -1});
  }
  bytes->assign(reinterpret_cast<unsigned char*>(v.data()), reinterpret_cast<unsigned char*>(v.data() + v.size()));
}

}  // namespace

TEST(SequenceShards, RecordsRoundTripAndVerify) {
  const std::string dir = fresh_dir("seqrt");
  Manifest m;
  m.spec = seq_spec();
  EXPECT_EQ(m.spec.record_width(), 5);
  EXPECT_EQ(m.spec.format_version(), 2);
  std::vector<unsigned char> bytes;
  std::vector<int64_t> records;
  seq_data(m.spec, 20, &bytes, &records);
  m.splits.emplace_back("train", write_split(dir, "train", m.spec, bytes.data(), records.data(), 20, 2, WriteOptions{}));
  write_manifest(dir, m);
  const Manifest back = read_manifest(dir);
  EXPECT_TRUE(back.spec.ragged);
  EXPECT_EQ(back.spec.max_target_length, 3);
  EXPECT_EQ(back.spec.tokens, m.spec.tokens);
  EXPECT_NE(read_text_file(dir + "/manifest.json").find("\"lockstep_format\":2"), std::string::npos);
  const ShardHeader h = read_shard_header(dir + "/train-00000-of-00002.h5");
  EXPECT_TRUE(h.spec.ragged);
  EXPECT_EQ(h.spec.tokens, m.spec.tokens);
  EXPECT_EQ(verify_dataset(dir).size(), 2u);

  // Both reader modes hand out the same records as written.
  for (const ReadMode mode : {ReadMode::kMemory, ReadMode::kStream}) {
    ReaderOptions opt;
    opt.mode = mode;
    opt.block_samples = 3;
    const RankReader r(dir, back, "train", 0, 1, opt);
    const EpochOrder order = r.order(/*shuffle=*/false, 0, 0);
    std::vector<unsigned char> got(20 * back.spec.sample_bytes());
    std::vector<int64_t> rec(20 * 5);
    StreamCache cache;
    r.fill(order, 0, 20, got.data(), rec.data(), cache);
    for (int64_t i = 0; i < 20; ++i) {
      const int64_t id = order.ids[static_cast<size_t>(i)];
      EXPECT_EQ(std::vector<int64_t>(rec.begin() + i * 5, rec.begin() + i * 5 + 5),
                std::vector<int64_t>(records.begin() + id * 5, records.begin() + id * 5 + 5));
      EXPECT_EQ(target_length(back.spec, rec.data() + i * 5), id % 2 ? 1 : 2);
    }
  }
}

TEST(SequenceShards, BadRecordsAreNamed) {
  const DatasetSpec s = seq_spec();
  std::vector<unsigned char> bytes;
  std::vector<int64_t> records;
  seq_data(s, 2, &bytes, &records);
  auto bad = records;
  bad[1] = 0;  // length 0
  EXPECT_ERROR_CONTAINS(validate_samples(s, bytes.data(), bad.data(), 2, 0, "f.h5"), "f.h5: length 0 of sample 0");
  bad = records;
  bad[1] = 7;  // longer than the padded 6
  EXPECT_ERROR_CONTAINS(validate_samples(s, bytes.data(), bad.data(), 2, 0, "f.h5"), "is outside [1, 6]");
  bad = records;
  bad[2] = 4;  // token outside the vocabulary
  EXPECT_ERROR_CONTAINS(validate_samples(s, bytes.data(), bad.data(), 2, 0, "f.h5"), "target token 4 at position 0");
  bad = records;
  bad[2] = -1;
  bad[3] = -1;  // empty target
  EXPECT_ERROR_CONTAINS(validate_samples(s, bytes.data(), bad.data(), 2, 0, "f.h5"), "empty target sequence");
  bad = records;
  bad[5 + 4] = 2;  // sample 1: [1, -1, 2], a token after the padding began
  EXPECT_ERROR_CONTAINS(validate_samples(s, bytes.data(), bad.data(), 2, 0, "f.h5"),
                        "target token 2 at position 2 of sample 1");
}

TEST(SequenceShards, ImportStatisticsSkipPadding) {
  // Channel statistics count only each sample's valid steps: values i+1 over lengths.
  const DatasetSpec s = seq_spec();
  std::vector<unsigned char> bytes;
  std::vector<int64_t> records;
  seq_data(s, 6, &bytes, &records);
  ChannelStats stats(s);
  double sum = 0, count = 0;
  for (int64_t i = 0; i < 6; ++i) {
    stats.add(bytes.data() + i * s.sample_bytes(), 1, records[static_cast<size_t>(i * 5 + 1)]);
    sum += static_cast<double>((i + 1) * (1 + i % 6));
    count += static_cast<double>(1 + i % 6);
  }
  std::vector<double> mean, std;
  stats.finish(&mean, &std);
  EXPECT_NEAR(mean[0], sum / count, 1e-9);
  EXPECT_NEAR(mean[1], sum / count, 1e-9);
}

TEST(SequenceShards, ManifestRefusesTargetsWithClassLabels) {
  const std::string dir = fresh_dir("seqbad");
  Manifest m;
  m.spec = seq_spec();
  std::vector<unsigned char> bytes;
  std::vector<int64_t> records;
  seq_data(m.spec, 4, &bytes, &records);
  m.splits.emplace_back("train", write_split(dir, "train", m.spec, bytes.data(), records.data(), 4, 1, WriteOptions{}));
  std::string text = manifest_to_json(m);
  const auto at = text.find("\"tokens\":[");
  text.replace(at, std::string("\"tokens\":[\" \",\"a\",\"b\",\"c\"]").size(), "\"tokens\":[]");
  write_file_atomic(dir + "/manifest.json", text);
  EXPECT_ERROR_CONTAINS(read_manifest(dir), "sequence targets need a token list");
}

// A vocabulary belongs to sequence targets in a dataset; unlabelled speech has none (a CTC
// model's is given to it for `predict`: sequence_outputs() on the model's view of the data).
TEST(SequenceShards, TokensWithoutTargetsAreRefusedButMakeSequenceOutputs) {
  DatasetSpec s = seq_spec();
  s.max_target_length = 0;
  EXPECT_EQ(spec_problem(s), "a token list without sequence targets");
  EXPECT_TRUE(s.sequence_outputs());
  EXPECT_FALSE(s.sequence_targets());
  s.tokens.clear();
  EXPECT_EQ(spec_problem(s), "");
  EXPECT_FALSE(s.sequence_outputs());
}

TEST(SequenceShards, LengthBucketingIsAPermutationOfSimilarLengthBatches) {
  // 103 samples of lengths 1..300 (scrambled), batch 8, windows of 4 batches.
  std::vector<int64_t> lengths(103);
  for (size_t i = 0; i < lengths.size(); ++i) lengths[i] = 1 + static_cast<int64_t>((i * 37) % 300);
  const EpochOrder a = bucketed_order(lengths, 8, 4, 7, 0, 0);
  std::vector<int64_t> sorted = a.ids;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], static_cast<int64_t>(i));  // a permutation
  // Pure: the same inputs give the same order; another epoch or rank another one.
  EXPECT_EQ(bucketed_order(lengths, 8, 4, 7, 0, 0).ids, a.ids);
  EXPECT_NE(bucketed_order(lengths, 8, 4, 7, 1, 0).ids, a.ids);
  EXPECT_NE(bucketed_order(lengths, 8, 4, 7, 0, 1).ids, a.ids);
  // Padding: the summed (batch max - length) is far below a plain shuffle's.
  const auto waste = [&](const std::vector<int64_t>& ids) {
    int64_t w = 0;
    for (size_t b = 0; b + 8 <= ids.size(); b += 8) {
      int64_t mx = 0;
      for (size_t i = b; i < b + 8; ++i) mx = std::max(mx, lengths[static_cast<size_t>(ids[i])]);
      for (size_t i = b; i < b + 8; ++i) w += mx - lengths[static_cast<size_t>(ids[i])];
    }
    return w;
  };
  const EpochOrder plain = memory_order(103, true, 7, 0, 0);
  EXPECT_LT(waste(a.ids) * 3, waste(plain.ids));
}
