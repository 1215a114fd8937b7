// core/data/batch_feed: a training batch through the feed (packed into one host block, one
// copy into a landing block — what a GPU does on its copy stream) and normalised by
// BatchMaker::normalise() equals BatchMaker::inputs() of the loader's bytes bit for bit —
// images, clips and ragged sequences, in either layout — and its labels are the records'
// class column. Run with device = CPU (the staged path with plain memory; issue 32).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "core/base/error.hpp"
#include "core/data/batch_feed.hpp"
#include "core/data/batch_maker.hpp"
#include "io/loader/epoch_loader.hpp"
#include "io/loader/epoch_loaders.hpp"
#include "io/loader/rank_reader.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using lockstep::testing::FakeCopies;
using lockstep::testing::fake_host_buffers;
using lockstep::testing::pictures_spec;

namespace {

// RAW bytes of N samples of SPEC: random values of its dtype (finite floats).
std::vector<unsigned char> random_samples(const io::DatasetSpec& spec, int64_t n, uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<int64_t> dims{n};
  dims.insert(dims.end(), spec.sample_shape.begin(), spec.sample_shape.end());
  const torch::Tensor t = spec.dtype == io::DType::kUInt8
                              ? torch::randint(0, 256, dims, torch::kUInt8)
                              : (torch::randn(dims) * 40 + 100).to(stored_scalar_type(spec.dtype));
  const auto* p = static_cast<const unsigned char*>(t.data_ptr());
  return std::vector<unsigned char>(p, p + n * static_cast<int64_t>(spec.sample_bytes()));
}

// Over more batches than the feed has slots: fed + normalised == inputs(), staged or not,
// and the labels are each record's first column; the loader's buffers are overwritten as
// soon as feed() returns, as the loader does.
void expect_fed_equals_inputs(const io::DatasetSpec& spec, bool channels_last,
                              std::vector<int64_t> records_of_two = {}) {
  const BatchMaker maker(spec, torch::kCPU, /*stage=*/false, channels_last);
  BatchFeed staged(spec, torch::kCPU, /*stage=*/true), direct(spec, torch::kCPU, /*stage=*/false);
  const int64_t w = spec.record_width();
  for (uint64_t batch = 0; batch < 2 * BatchFeed::kSlots + 1; ++batch) {
    // Batches of several sizes: the landing blocks grow to the largest and hold smaller ones.
    const int64_t n = records_of_two.empty() ? int64_t{2} + static_cast<int64_t>(batch * 5 % 7) : 2;
    std::vector<unsigned char> raw = random_samples(spec, n, 40 + batch);
    std::vector<int64_t> records = records_of_two;
    if (records.empty())
      for (int64_t i = 0; i < n * w; ++i)
        records.push_back((i * 7 + static_cast<int64_t>(batch)) % 10);
    const torch::Tensor want = maker.inputs(raw.data(), n, records.data());
    std::vector<int64_t> labels;
    for (int64_t i = 0; i < n; ++i) labels.push_back(records[static_cast<size_t>(i * w)]);
    const FedBatch a = direct.feed(raw.data(), n, records.data());
    ASSERT_TRUE(torch::equal(maker.normalise(a.samples, records.data()), want))
        << spec.name << " batch " << batch;
    direct.done();
    const FedBatch b = staged.feed(raw.data(), n, records.data());
    std::vector<int64_t> kept = records;
    std::fill(raw.begin(), raw.end(), uint8_t{0});
    std::fill(records.begin(), records.end(), int64_t{-5});
    const torch::Tensor got = maker.normalise(b.samples, kept.data());
    ASSERT_TRUE(torch::equal(got, want)) << spec.name << " staged batch " << batch;
    EXPECT_EQ(got.scalar_type(), torch::kFloat);
    EXPECT_EQ(b.samples.scalar_type(), stored_scalar_type(spec.dtype))
        << "samples travel in their stored dtype";
    EXPECT_TRUE(torch::equal(b.labels, torch::tensor(labels, torch::kLong))) << "batch " << batch;
    EXPECT_TRUE(torch::equal(a.labels, b.labels));
    if (channels_last && got.dim() == 4)
      EXPECT_TRUE(got.is_contiguous(torch::MemoryFormat::ChannelsLast));
    if (channels_last && got.dim() == 4)
      EXPECT_EQ(got.stride(1), 1) << "NHWC strides, even for one channel";
    if (channels_last && got.dim() == 5) EXPECT_EQ(got.stride(1), 1) << "NDHWC strides";
    if (!channels_last) EXPECT_TRUE(got.is_contiguous());
    staged.done();
  }
}

}  // namespace

TEST(BatchFeed, FedImagesNormaliseToTheInputsBitForBit) {
  expect_fed_equals_inputs(pictures_spec({3, 9, 7}), false);
  expect_fed_equals_inputs(pictures_spec({3, 9, 7}), true);
  io::DatasetSpec gray = pictures_spec({1, 8, 8});
  gray.mean = {100.0};
  gray.std = {40.0};
  expect_fed_equals_inputs(gray, true);
}

TEST(BatchFeed, FedClipsAndOtherDtypesNormaliseToTheInputsBitForBit) {
  expect_fed_equals_inputs(pictures_spec({3, 4, 6, 6}), false);
  expect_fed_equals_inputs(pictures_spec({3, 4, 6, 6}), true);
  expect_fed_equals_inputs(pictures_spec({3, 5, 5}, io::DType::kFloat16), true);
  expect_fed_equals_inputs(pictures_spec({3, 5, 5}, io::DType::kFloat32), false);
}

TEST(BatchFeed, FedRaggedSequencesAreCutAndMaskedAsInputsDoes) {
  io::DatasetSpec s = lockstep::testing::speech_spec();
  s.mean = {1.0, 0.5, -1.0};
  s.std = {2.0, 3.0, 0.5};
  // Two records (length, then targets): 7 and 12 valid steps of 20.
  expect_fed_equals_inputs(s, false, {-1, 7, 1, 2, -1, -1, -1, 12, 0, -1, -1, -1});
}

TEST(BatchFeed, ReusesItsBlocksInTurnAndTakesOneBatchAtATime) {
  const io::DatasetSpec spec = pictures_spec({3, 4, 4});
  BatchFeed feed(spec, torch::kCPU, /*stage=*/true);
  std::vector<unsigned char> raw = random_samples(spec, 4, 1);
  const std::vector<int64_t> records{1, 2, 3, 4};
  std::vector<const void*> first;
  for (size_t k = 0; k < 3 * BatchFeed::kSlots; ++k) {
    const FedBatch f = feed.feed(raw.data(), 4, records.data());
    if (k < BatchFeed::kSlots)
      first.push_back(f.samples.data_ptr());
    else
      EXPECT_EQ(f.samples.data_ptr(), first[k % BatchFeed::kSlots])
          << "a block is allocated once, then reused";
    EXPECT_THROW(feed.feed(raw.data(), 4, records.data()), Error) << "feed() twice without done()";
    feed.done();
  }
  EXPECT_THROW(feed.done(), Error) << "done() without feed()";
  EXPECT_EQ(feed.host_waits(), 0) << "the CPU's copies are complete when they return";
}

// The training loader's batch in pinned memory (a GPU: io/loader/batch_pool) is copied
// straight out of the loader's buffer, with no host copy of the samples, and the feed gives
// what a packed feed gives: samples and labels. The batch's fence is recorded once per feed,
// after its copy was issued (the loader writes the batch again only once it is done).
TEST(BatchFeed, ABatchInPinnedMemoryIsCopiedStraightOutOfTheLoadersBuffer) {
  for (const io::DatasetSpec& spec : {pictures_spec({3, 5, 5}), pictures_spec({2, 3, 4, 4}, io::DType::kFloat16)}) {
    FakeCopies copies;
    const HostBuffers buffers = fake_host_buffers(&copies);
    const std::unique_ptr<Fence> fence = buffers.fence();
    BatchFeed packed(spec, torch::kCPU, /*stage=*/true), direct(spec, torch::kCPU, /*stage=*/true);
    for (uint64_t batch = 0; batch < 2 * BatchFeed::kSlots + 1; ++batch) {
      const int64_t n = 2 + static_cast<int64_t>(batch % 3);
      const std::vector<unsigned char> raw = random_samples(spec, n, 7 + batch);
      std::vector<int64_t> records;
      for (int64_t i = 0; i < n; ++i) records.push_back((i * 3 + static_cast<int64_t>(batch)) % 10);
      const FedBatch a = packed.feed(raw.data(), n, records.data());
      const int recorded = copies.recorded();
      const FedBatch b = direct.feed(raw.data(), n, records.data(), fence.get());
      EXPECT_EQ(copies.recorded(), recorded + 1) << "the batch's fence, once per feed";
      EXPECT_FALSE(copies.done(recorded)) << "recorded, not waited for: the loader's thread waits";
      copies.complete(recorded);
      EXPECT_NE(b.samples.data_ptr(), static_cast<const void*>(raw.data())) << "a copy, not a view";
      EXPECT_TRUE(torch::equal(a.samples, b.samples)) << spec.name << " batch " << batch;
      EXPECT_TRUE(torch::equal(a.labels, b.labels)) << spec.name << " batch " << batch;
      packed.done();
      direct.done();
    }
    EXPECT_EQ(direct.direct_feeds(), static_cast<int64_t>(2 * BatchFeed::kSlots + 1));
    EXPECT_EQ(packed.direct_feeds(), 0);
  }
}

// The training path of a GPU, run on the CPU: EpochLoaders in the feed's host buffers (fake
// fences, left in flight until the loader's thread waits for them), each batch fed straight
// out of the loader's memory and normalised, over two epochs with the next one started early,
// equals what a plain-memory loader's bytes give through BatchMaker::inputs.
TEST(BatchFeed, LoaderBatchesInHostBuffersFeedTheSameInputsAsPlainOnes) {
  const std::string dir = lockstep::testing::fresh_dir("ds");
  const io::Manifest m = lockstep::testing::write_tiny_dataset(dir, 30, 2);
  io::ReaderOptions o;
  o.mode = io::ReadMode::kStream;
  o.block_samples = 4;
  const io::RankReader reader(dir, m, "train", 0, 1, o), plain_reader(dir, m, "train", 0, 1, o);
  FakeCopies copies;
  const HostBuffers buffers = fake_host_buffers(&copies);
  io::EpochLoaders loaders(reader, 3, 4, 6, 2, &buffers);
  const BatchMaker maker(m.spec, torch::kCPU, /*stage=*/false);
  BatchFeed feed(m.spec, torch::kCPU, /*stage=*/true);
  int64_t fed = 0;
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    io::EpochLoader& loader = loaders.open(epoch, 0);
    io::EpochLoader plain(plain_reader, plain_reader.order(true, 3, epoch, 4), 4, 6, 0, 2);
    for (int64_t k = 0; k < 6; ++k) {
      const io::Batch* b = loader.next();
      const io::Batch* want = plain.next();
      ASSERT_NE(b, nullptr);
      const FedBatch f = feed.feed(b->samples, 4, b->labels.data(), b->reuse);
      ASSERT_TRUE(torch::equal(maker.normalise(f.samples), maker.inputs(want->samples, 4, want->labels.data())))
          << "epoch " << epoch << " step " << k;
      EXPECT_TRUE(torch::equal(f.labels, maker.labels(want->labels.data(), 4)));
      feed.done();
      ++fed;
    }
    if (epoch == 0) loaders.start(1);
  }
  loaders.release();
  EXPECT_EQ(copies.recorded(), fed) << "every batch's copy recorded its fence";
  EXPECT_GT(copies.waited(), 0) << "the loader waited for copies left in flight";
  EXPECT_EQ(feed.direct_feeds(), fed);
}
