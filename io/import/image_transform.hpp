// image_transform: what the images: importer does to a decoded image before storing it —
// torchvision's Resize(shorter side) + CenterCrop, the channel count, and CHW layout.
//
// 1. fit_image: scaled so it covers HEIGHT x WIDTH (the side that needs the larger scale is
//    set exactly, the other truncated as torchvision computes it), resampled with a triangle
//    filter widened by the scale when shrinking (PIL's antialiased bilinear), then cropped
//    at the centre (offsets rounded half to even, as torchvision's CenterCrop). An image
//    already HEIGHT x WIDTH is returned untouched: its pixels are stored as they are.
// 2. to_channels: gray to RGB repeats the channel; RGB to gray is ITU-R 601 luma, as PIL's
//    convert("L").
// 3. store_chw: interleaved HWC to the planar [C, H, W] every lockstep image sample is.
#pragma once

#include <cstdint>

#include "io/import/image_decoder.hpp"

namespace lockstep::io {

Image fit_image(const Image& in, int height, int width);
Image to_channels(Image in, int channels);
void store_chw(const Image& im, uint8_t* out);

}  // namespace lockstep::io
