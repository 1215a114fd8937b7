// core/data/batch_maker: the staged upload path (what a GPU runs: every upload through the
// staging rings, samples in their stored dtype, converted after the copy) gives the direct
// path's batches bit for bit — images, clips and ragged sequences, labels, lengths and CTC
// targets, and every augmentation with its draws uploaded the staged way. Run with
// device = CPU (issue 32: the same code path, proven where CI can run it).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "core/data/augment.hpp"
#include "core/data/batch_maker.hpp"
#include "core/optim/loss.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using lockstep::testing::pictures_spec;

namespace {

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  torch::manual_seed(seed);
  const torch::Tensor t = torch::randint(0, 256, {static_cast<int64_t>(n)}, torch::kUInt8);
  return std::vector<uint8_t>(t.data_ptr<uint8_t>(), t.data_ptr<uint8_t>() + n);
}

void expect_same_batches(const io::DatasetSpec& spec, const AugmentOptions& aug) {
  const BatchMaker direct(spec, torch::kCPU, /*stage=*/false), staged(spec, torch::kCPU, /*stage=*/true);
  const int64_t n = 8;
  for (uint64_t batch = 0; batch < 6; ++batch) {  // more batches than the rings have slots
    std::vector<uint8_t> raw = random_bytes(static_cast<size_t>(n) * spec.sample_bytes(), batch);
    std::vector<int64_t> records(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) records[static_cast<size_t>(i)] = (i * 7 + static_cast<int64_t>(batch)) % 10;
    const torch::Tensor a = direct.inputs(raw.data(), n), b = staged.inputs(raw.data(), n);
    std::fill(raw.begin(), raw.end(), uint8_t{0});  // the loader reuses its buffer at once
    ASSERT_TRUE(torch::equal(a, b)) << spec.name << " batch " << batch;
    EXPECT_EQ(b.scalar_type(), torch::kFloat);
    EXPECT_TRUE(torch::equal(direct.labels(records.data(), n), staged.labels(records.data(), n)));
    const torch::Tensor ya = augment_batch(a, aug, 1000 + batch);
    const torch::Tensor yb =
        augment_batch(b, aug, 1000 + batch, [&](const torch::Tensor& host) { return staged.upload(host); });
    EXPECT_TRUE(torch::equal(ya, yb)) << spec.name << " augmented batch " << batch;
    EXPECT_FALSE(torch::equal(ya, a)) << "the augmentation did something";
  }
}

}  // namespace

TEST(BatchMaker, StagedImagesEqualDirectOnesBitForBit) {
  AugmentOptions aug;
  aug.crop_pad = 2;
  aug.hflip = true;
  aug.brightness = 0.2;
  aug.contrast = 0.2;
  aug.erase = 0.5;
  expect_same_batches(pictures_spec({3, 16, 16}), aug);
}

TEST(BatchMaker, StagedClipsEqualDirectOnesBitForBit) {
  AugmentOptions aug;
  aug.crop_pad = 1;
  aug.hflip = true;
  aug.time_jitter = 1;
  aug.erase = 0.5;
  expect_same_batches(pictures_spec({3, 4, 12, 12}), aug);
}

TEST(BatchMaker, StagedSequencesEqualDirectOnesBitForBit) {
  io::DatasetSpec s = lockstep::testing::speech_spec();
  s.mean = {1.0, 0.5, -1.0};  // per channel, so a channel mix-up shows
  s.std = {2.0, 3.0, 0.5};
  const BatchMaker direct(s, torch::kCPU, false), staged(s, torch::kCPU, true);
  torch::manual_seed(3);
  const torch::Tensor raw = torch::randn({2, 3, 20});
  const std::vector<int64_t> records{-1, 7, 1, 2, -1, -1, -1, 12, 0, -1, -1, -1};
  EXPECT_TRUE(torch::equal(direct.inputs(raw.data_ptr(), 2, records.data()), staged.inputs(raw.data_ptr(), 2, records.data())));
  const SequenceTargets a = direct.targets(records.data(), 2), b = staged.targets(records.data(), 2);
  EXPECT_TRUE(torch::equal(a.targets, b.targets));
  EXPECT_TRUE(torch::equal(a.target_lengths, b.target_lengths));
  EXPECT_TRUE(torch::equal(a.lengths, b.lengths));
}

// The fewest frames a CTC alignment of each target takes: its tokens and a blank between
// equal neighbours ([1, 1, 2]: 4). A sample given fewer frames trains nothing (its loss is
// 0, not inf): loss.hpp's unalignable names it, and ctc_loss_each scores it 0.
TEST(BatchMaker, SequenceTargetsSayTheFramesAnAlignmentNeeds) {
  const io::DatasetSpec s = lockstep::testing::speech_spec();
  const BatchMaker maker(s, torch::kCPU, false);
  const std::vector<int64_t> records{-1, 7, 1, 1, 2, -1, -1, 12, 0, -1, -1, -1};
  const SequenceTargets t = maker.targets(records.data(), 2);
  EXPECT_TRUE(torch::equal(t.needed, torch::tensor({4, 1}, torch::kLong)));
  const torch::Tensor out_lengths = torch::tensor({3, 3}, torch::kLong);
  EXPECT_TRUE(torch::equal(unalignable(out_lengths, t.needed), torch::tensor({true, false})));
  torch::manual_seed(5);
  const torch::Tensor logits = torch::randn({2, 3, static_cast<int64_t>(s.tokens.size()) + 1});
  const torch::Tensor each = ctc_loss_each(logits, out_lengths, t.targets, t.target_lengths, static_cast<int64_t>(s.tokens.size()));
  EXPECT_EQ(each[0].item<double>(), 0.0);
  EXPECT_GT(each[1].item<double>(), 0.0);
  EXPECT_NEAR(each.mean().item<double>(),
              ctc_loss_mean(logits, out_lengths, t.targets, t.target_lengths, static_cast<int64_t>(s.tokens.size())).item<double>(),
              1e-6);
}
