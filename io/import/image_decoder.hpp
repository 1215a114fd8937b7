// image_decoder: JPEG (libjpeg-turbo) and PNG (libpng) files into 8-bit pixels, the way
// torchvision's ImageFolder sees them (PIL's convert("RGB"|"L")), for the images: importer.
//
// 1. The format is told by the file's signature, not its name.
// 2. JPEG: gray, YCbCr/RGB and CMYK/YCCK (Adobe's inverted CMYK too) to gray or RGB; the EXIF
//    orientation tag (APP1) is applied, as PIL's ImageOps.exif_transpose does. A libjpeg
//    warning (corrupt or truncated data) is an error: a half-grey image never trains.
// 3. PNG: any bit depth; palettes and tRNS expanded, 16-bit samples to 8 by their high byte,
//    alpha dropped (not composited: what PIL's convert("RGB") does), interlacing handled.
// 4. Anything else (another format, a truncated header, a zero or over-64k side) is refused
//    naming the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::io {

struct Image {
  int height = 0, width = 0, channels = 0;  // channels 1 (gray) or 3 (RGB)
  std::vector<uint8_t> pixels;              // height x width x channels, interleaved
};

// Decodes a JPEG or PNG held in DATA; WHAT names the file in errors.
Image decode_image(const unsigned char* data, size_t n, const std::string& what);

// True when DATA starts like a JPEG or a PNG (a file the importer should try).
bool looks_like_image(const unsigned char* data, size_t n);

}  // namespace lockstep::io
