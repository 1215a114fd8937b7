// image_import: folders of JPEG/PNG images as the input of `lockstep shard --input images:DIR`,
// the layout torchvision's ImageFolder reads.
//
// 1. Layout: DIR/CLASS/**/*.jpg|jpeg|png (one split, 'train', --val-fraction carved from it),
//    or DIR/train/CLASS/..., with DIR/val/CLASS/... and/or DIR/test/CLASS/... as those splits
//    (when DIR holds only train/, val/ and test/ folders; a val/ folder replaces
//    --val-fraction). Other files are skipped (counted, the first named). Files and folders
//    are taken in byte order, so the sample order is the same on every machine.
// 2. Classes: the train folders' names, sorted (ImageFolder's ids), or --class-names' order;
//    a val/test folder that is not a class, or a class folder without an image, is refused.
// 3. Samples: uint8 [C, H, W]. C: --color gray (1) or rgb (3), or auto, the first image's.
//    An RGB image in a gray set is refused unless --color gray says to convert it. H x W:
//    --image-size, each image resized and centre-cropped (image_transform); without it every
//    image must have the first one's size.
// 4. Decoding runs on --decode-threads threads (0: every core) inside each read, in order.
//    A file that does not decode is refused naming it; with --skip-bad every image is
//    decoded once at open (a second full pass), each bad one named in a warning, skipped and
//    counted (SampleSource::skipped, the manifest's skipped_inputs).
#pragma once

#include <string>
#include <vector>

#include "io/import/importer.hpp"

namespace lockstep::io {

struct ImageOptions {
  int height = 0, width = 0;   // --image-size HxW; 0: the images' own size, all alike
  std::string color = "auto";  // auto | gray | rgb
  int threads = 0;             // decoding threads; 0: every core
  bool skip_bad = false;       // skip (and name) files that do not decode, instead of failing
};

// The splits of DIR. CLASS_NAMES (--class-names) orders the classes if given; *NAMES gets
// the class names; *LISTING a fingerprint of every image's path, size and mtime (a changed
// file re-imports).
std::vector<InputSplit> open_images(const std::string& dir, const ImageOptions& opt,
                                    const std::vector<std::string>& class_names, std::vector<std::string>* names,
                                    std::string* listing);

}  // namespace lockstep::io
