// Image augmentation: shape-preserving, deterministic per seed, real crops and flips.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/data/augment.hpp"
#include "core/base/error.hpp"

using namespace lockstep;

TEST(Augment, DisabledIsIdentity) {
  const auto x = torch::randn({4, 1, 5, 5});
  EXPECT_TRUE(torch::equal(augment_images(x, AugmentOptions{}, 1), x));
}

TEST(Augment, FlipOnlyFlipsSomeSamplesExactly) {
  const auto x = torch::arange(8 * 2 * 3 * 4, torch::kFloat).view({8, 2, 3, 4});
  const auto y = augment_images(x, AugmentOptions{0, true}, 123);
  int flipped = 0;
  for (int64_t i = 0; i < 8; ++i) {
    const bool same = torch::equal(y[i], x[i]), mirrored = torch::equal(y[i], x[i].flip({2}));
    EXPECT_TRUE(same || mirrored);
    flipped += mirrored;
  }
  EXPECT_GT(flipped, 0);
  EXPECT_LT(flipped, 8);
  EXPECT_TRUE(torch::equal(augment_images(x, AugmentOptions{0, true}, 123), y));  // same seed, same draw
}

TEST(Augment, CropKeepsShapeAndShiftsContent) {
  const auto x = torch::ones({16, 1, 6, 6});
  const auto y = augment_images(x, AugmentOptions{2, false}, 5);
  EXPECT_EQ(y.sizes(), x.sizes());
  // Shifted crops bring in zero padding for most samples.
  EXPECT_LT(y.sum().item<double>(), x.sum().item<double>());
  EXPECT_FALSE(torch::equal(augment_images(x, AugmentOptions{2, false}, 6), y));
}

TEST(Augment, NonImagesAreRefused) {
  EXPECT_THROW(augment_images(torch::randn({4, 10}), AugmentOptions{0, true}, 1), Error);
}
