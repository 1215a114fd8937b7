// Augmentation of images and clips: shape-preserving, deterministic per seed, real crops,
// flips, temporal shifts and photometric changes.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/data/augment.hpp"
#include "core/base/error.hpp"
#include "io/loader/sample_order.hpp"
#include "test_helpers.hpp"

using namespace lockstep;

TEST(Augment, DisabledIsIdentity) {
  const auto x = torch::randn({4, 1, 5, 5});
  EXPECT_TRUE(torch::equal(augment_batch(x, AugmentOptions{}, 1), x));
}

TEST(Augment, FlipOnlyFlipsSomeSamplesExactly) {
  const auto x = torch::arange(8 * 2 * 3 * 4, torch::kFloat).view({8, 2, 3, 4});
  const auto y = augment_batch(x, AugmentOptions{0, true}, 123);
  int flipped = 0;
  for (int64_t i = 0; i < 8; ++i) {
    const bool same = torch::equal(y[i], x[i]), mirrored = torch::equal(y[i], x[i].flip({2}));
    EXPECT_TRUE(same || mirrored);
    flipped += mirrored;
  }
  EXPECT_GT(flipped, 0);
  EXPECT_LT(flipped, 8);
  EXPECT_TRUE(torch::equal(augment_batch(x, AugmentOptions{0, true}, 123), y));  // same seed, same draw
}

TEST(Augment, CropKeepsShapeAndShiftsContent) {
  const auto x = torch::ones({16, 1, 6, 6});
  const auto y = augment_batch(x, AugmentOptions{2, false}, 5);
  EXPECT_EQ(y.sizes(), x.sizes());
  // Shifted crops bring in zero padding for most samples.
  EXPECT_LT(y.sum().item<double>(), x.sum().item<double>());
  EXPECT_FALSE(torch::equal(augment_batch(x, AugmentOptions{2, false}, 6), y));
}

TEST(Augment, NonImagesAreRefused) {
  EXPECT_THROW(augment_batch(torch::randn({4, 10}), AugmentOptions{0, true}, 1), Error);
}

// The batched gathers equal a per-sample loop of pad, crop and flip (the reference), for
// images and for clips, where every frame of a clip gets the same window.
TEST(Augment, CropAndFlipEqualThePerSampleReference) {
  for (const auto shape : {std::vector<int64_t>{6, 2, 5, 7}, std::vector<int64_t>{6, 2, 3, 5, 7}}) {
    const auto x = torch::arange(c10::multiply_integers(shape), torch::kFloat).view(shape);
    const AugmentOptions opt{2, true};
    const auto y = augment_batch(x, opt, 77);
    const int64_t d = x.dim();
    const auto padded = torch::nn::functional::pad(x, torch::nn::functional::PadFuncOptions({2, 2, 2, 2}));
    uint64_t state = 77;
    for (int64_t i = 0; i < shape[0]; ++i) {
      const uint64_t r = io::splitmix64(state);
      torch::Tensor want = padded[i].narrow(d - 3, static_cast<int64_t>(r % 5), shape[d - 2])
                               .narrow(d - 2, static_cast<int64_t>((r >> 16) % 5), shape[d - 1]);
      if ((r >> 40) & 1) want = want.flip({d - 2});
      EXPECT_TRUE(torch::equal(y[i], want)) << "sample " << i << " of a " << d << "-d batch";
    }
  }
}

TEST(Augment, TimeJitterShiftsWholeClipsWithEdgeFrames) {
  const auto x = torch::arange(16 * 9, torch::kFloat).view({16, 1, 9, 1, 1}).expand({16, 1, 9, 2, 2}).contiguous();
  const auto y = augment_batch(x, AugmentOptions{0, false, 2}, 9);
  int shifted = 0;
  for (int64_t i = 0; i < 16; ++i) {
    bool found = false;
    for (int64_t j = -2; j <= 2 && !found; ++j) {
      auto idx = torch::clamp(torch::arange(9) + j, 0, 8);
      found = torch::equal(y[i], x[i].index_select(1, idx));
      shifted += found && j != 0;
    }
    EXPECT_TRUE(found) << "sample " << i << " is not x shifted by at most 2 frames";
  }
  EXPECT_GT(shifted, 0);
}

TEST(Augment, BrightnessAndContrastAreOneAffineMapPerSample) {
  const auto x = torch::randn({12, 1, 4, 3, 3});
  const AugmentOptions opt{0, false, 0, 0.5, 0.3};
  const auto y = augment_batch(x, opt, 4);
  for (int64_t i = 0; i < 12; ++i) {
    const auto m = x[i].mean();
    // y = (x - m) * c + m + b: c from the spread, b from the means.
    const double c = ((y[i] - y[i].mean()).norm() / (x[i] - m).norm()).item<double>();
    const double b = (y[i].mean() - m).item<double>();
    EXPECT_GE(c, 0.7 - 1e-5);
    EXPECT_LE(c, 1.3 + 1e-5);
    EXPECT_LE(std::abs(b), 0.5 + 1e-5);
    EXPECT_TRUE(torch::allclose(y[i], (x[i] - m) * c + m + b, 1e-4, 1e-4)) << "sample " << i;
  }
  EXPECT_TRUE(torch::equal(augment_batch(x, opt, 4), y));
}

TEST(Augment, OptionsAreCheckedAgainstTheSampleShape) {
  EXPECT_NO_THROW(check_augment(AugmentOptions{2, true}, {1, 28, 28}, "fmnist"));
  EXPECT_NO_THROW(check_augment(AugmentOptions{2, true, 1}, {1, 17, 32, 32}, "video"));
  EXPECT_THROW(check_augment(AugmentOptions{0, false, 1}, {1, 28, 28}, "fmnist"), UsageError);
  EXPECT_THROW(check_augment(AugmentOptions{0, true}, {9, 128}, "har"), UsageError);
  EXPECT_NO_THROW(check_augment(AugmentOptions{}, {9, 128}, "har"));
  // A padding past half the image (crops of padding alone; 100000 allocated terabytes) and a
  // jitter of the whole clip are refused, naming the option and the limit.
  EXPECT_NO_THROW(check_augment(AugmentOptions{14}, {1, 28, 28}, "fmnist"));
  EXPECT_ERROR_CONTAINS(check_augment(AugmentOptions{15}, {1, 28, 28}, "fmnist"),
                        "--data.random-crop 15 pads more than half of the 28x28 image (fmnist): at most 14");
  EXPECT_ERROR_CONTAINS(check_augment(AugmentOptions{0, false, 17}, {1, 17, 32, 32}, "video"),
                        "--data.time-jitter 17 shifts a clip of 17 frames by all of them (video): at most 16");
}

// Random erasing: each erased sample loses exactly one axis-aligned rectangle of 2-40% of
// its area (aspect 0.3-3.3, up to rounding) to 0, the same on every channel and frame;
// everything else is untouched; P is honoured roughly; the draw is the seed's.
TEST(Augment, RandomErasingZeroesOneRectanglePerErasedSample) {
  for (const auto shape : {std::vector<int64_t>{200, 2, 28, 28}, std::vector<int64_t>{40, 1, 3, 16, 20}}) {
    const auto x = torch::rand(shape) + 1.0;  // no zeros of its own
    AugmentOptions opt;
    opt.erase = 0.5;
    const auto y = augment_batch(x, opt, 9);
    const int64_t n = shape[0], h = shape[shape.size() - 2], w = shape[shape.size() - 1];
    int erased = 0;
    for (int64_t i = 0; i < n; ++i) {
      const auto zero = y[i].eq(0);
      EXPECT_TRUE(torch::equal(y[i].masked_select(zero.logical_not()), x[i].masked_select(zero.logical_not())));
      // One H x W footprint shared by every channel (and frame).
      const auto foot = zero.flatten(0, -3);  // [C(*T), H, W]
      for (int64_t k = 1; k < foot.size(0); ++k) ASSERT_TRUE(torch::equal(foot[k], foot[0]));
      const auto rows = foot[0].any(1).nonzero().flatten(), cols = foot[0].any(0).nonzero().flatten();
      const int64_t count = foot[0].sum().item<int64_t>();
      if (count == 0) continue;
      ++erased;
      const int64_t eh = rows[-1].item<int64_t>() - rows[0].item<int64_t>() + 1;
      const int64_t ew = cols[-1].item<int64_t>() - cols[0].item<int64_t>() + 1;
      EXPECT_EQ(count, eh * ew) << "sample " << i << ": not a filled rectangle";
      EXPECT_EQ(rows.numel(), eh);
      EXPECT_EQ(cols.numel(), ew);
      const double frac = static_cast<double>(count) / static_cast<double>(h * w);
      EXPECT_GE(frac, 0.02 * 0.5) << "sample " << i;  // rounding of small boxes
      EXPECT_LE(frac, 0.40 * 1.3) << "sample " << i;
    }
    EXPECT_GT(erased, n / 5);
    EXPECT_LT(erased, n * 4 / 5);
    EXPECT_TRUE(torch::equal(augment_batch(x, opt, 9), y));
    EXPECT_FALSE(torch::equal(augment_batch(x, opt, 10), y));
  }
  AugmentOptions all;
  all.erase = 1.0;
  const auto z = augment_batch(torch::ones({50, 1, 28, 28}), all, 3);
  for (int64_t i = 0; i < 50; ++i) EXPECT_GT(z[i].eq(0).sum().item<int64_t>(), 0) << "P = 1 left sample " << i;
}
