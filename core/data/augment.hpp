// augment: data augmentation for image batches [N, C, H, W] and clip batches
// [N, C, T, H, W], applied on the batch's device after normalisation, to training
// batches only. Each sample gets its own draw; every frame of a clip the same one.
//
// random crop: pad H and W by PAD on each side (zeros, i.e. the mean after
//   normalisation) and cut an H x W window at a random offset;
// horizontal flip: each sample with probability 1/2;
// time jitter (clips): shift the clip by a random j in [-J, J] frames, the first or last
//   frame repeated where the shift runs past the clip;
// brightness: add a random b in [-B, B]; contrast: scale about the sample's mean by a
//   random c in [1-C, 1+C] (both in normalised units, per sample);
// random erasing (Zhong et al., 2017; torchvision's RandomErasing): with probability P a
//   rectangle of 2-40% of the image, aspect ratio 0.3-3.3 (log-uniform), is set to 0, the
//   dataset mean after normalisation; applied last, the same rectangle on every frame.
// Draws come from splitmix64 seeded by (seed, epoch, step, rank): a resumed run augments
// exactly as the uninterrupted one would. Crop and flip draw as they always did (one
// number per sample); the clip and photometric draws follow only when enabled.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lockstep {

struct AugmentOptions {
  int64_t crop_pad = 0;
  bool hflip = false;
  int64_t time_jitter = 0;
  double brightness = 0.0;
  double contrast = 0.0;
  double erase = 0.0;  // probability of a random erasing per sample
  bool enabled() const {
    return crop_pad > 0 || hflip || time_jitter > 0 || brightness > 0 || contrast > 0 || erase > 0;
  }
};

// Throws UsageError naming DATA when OPT does not apply to samples of SHAPE (images
// [C,H,W] or clips [C,T,H,W]; time jitter needs clips).
void check_augment(const AugmentOptions& opt, const std::vector<int64_t>& shape, const std::string& data);

// The batch's random draws (crop offsets, flips, shifts, boxes) are made on the host from
// SEED and sent to X's device by UPLOAD (the trainer's: BatchMaker::upload, non_blocking
// through the staging ring; empty: a plain .to(), as tests and the CPU need).
using Uploader = std::function<torch::Tensor(const torch::Tensor&)>;
torch::Tensor augment_batch(const torch::Tensor& x, const AugmentOptions& opt, uint64_t seed,
                            const Uploader& upload = {});

}  // namespace lockstep
