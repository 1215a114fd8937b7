// augment: data augmentation for image batches [N, C, H, W], applied after
// normalisation on the training batch only.
//
// random crop: pad each side by PAD (zeros, i.e. the mean after normalisation) and cut an
// H x W window at a random offset; horizontal flip: each sample with probability 1/2.
// Draws come from splitmix64 seeded by (seed, epoch, step, rank): a resumed run augments
// exactly as the uninterrupted one would.
#pragma once

#include <torch/types.h>

#include <cstdint>

namespace lockstep {

struct AugmentOptions {
  int64_t crop_pad = 0;
  bool hflip = false;
  bool enabled() const { return crop_pad > 0 || hflip; }
};

torch::Tensor augment_images(const torch::Tensor& x, const AugmentOptions& opt, uint64_t seed);

}  // namespace lockstep
