// image_import: see image_import.hpp.
#include "io/import/image_import.hpp"

#include <sys/stat.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <thread>

#include "core/base/error.hpp"
#include "core/base/hash.hpp"
#include "core/base/log.hpp"
#include "io/import/image_decoder.hpp"
#include "io/import/image_transform.hpp"
#include "io/util/file_util.hpp"
#include "core/base/parallel_for.hpp"

namespace lockstep::io {
namespace {

struct ImageItem {
  std::string path;
  int64_t label = 0;
};

bool has_image_extension(const std::string& name) {
  std::string ext = name.substr(name.find_last_of('.') == std::string::npos ? name.size() : name.find_last_of('.'));
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

// The folders an import has entered, by device and inode: a folder reached a second time
// (a link back up the tree, or two links to one folder) is refused naming both paths. A loop
// (cat/loop -> ..) was followed ~40 levels deep: 12 images became 492 samples, dog images
// labelled cat (a hostile finding).
class Folders {
 public:
  void enter(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return;  // gone meanwhile: list_dir names it
    const auto [it, fresh] = seen_.emplace(std::make_pair(st.st_dev, st.st_ino), path);
    if (!fresh)
      throw Error(path + " is the folder " + it->second + " again (a link): its images would be imported twice, "
                  "under two classes or in two splits; remove the link (to validate on the test images, import "
                  "no val/ and train with --data.val-split test)");
  }

 private:
  std::map<std::pair<dev_t, ino_t>, std::string> seen_;
};

// A dot-name (.cache, .git, .ipynb_checkpoints): a folder no one put images in for lockstep.
bool is_hidden(const std::string& name) { return !name.empty() && name[0] == '.'; }

// Every image file under DIR (recursively, in byte order); OTHER counts the rest.
void walk(const std::string& dir, Folders* folders, std::vector<std::string>* images, int64_t* other,
          std::string* first_other) {
  folders->enter(dir);
  for (const std::string& name : list_dir(dir)) {
    const std::string path = dir + "/" + name;
    if (is_directory(path)) {
      if (!is_hidden(name)) {
        walk(path, folders, images, other, first_other);
      } else if ((*other)++ == 0) {  // .ipynb_checkpoints, .cache: no one's images
        *first_other = path;
      }
    } else if (has_image_extension(name)) {
      images->push_back(path);
    } else {
      if ((*other)++ == 0) *first_other = path;
    }
  }
}

// The items of one split directory SPLIT_DIR/CLASS/...; CLASSES maps folder names to ids
// (DEFINE: folders not in it are added, else refused).
std::vector<ImageItem> list_split(const std::string& split_dir, Folders* folders, std::vector<std::string>* classes,
                                  bool define) {
  folders->enter(split_dir);
  std::vector<ImageItem> items;
  int64_t other = 0;
  std::string first_other;
  for (const std::string& name : list_dir(split_dir)) {
    const std::string folder = split_dir + "/" + name;
    if (!is_directory(folder) || is_hidden(name)) {  // a file, or a hidden folder (.cache, .git): no class
      if (other++ == 0) first_other = folder;
      continue;
    }
    auto it = std::find(classes->begin(), classes->end(), name);
    if (it == classes->end()) {
      if (!define)
        throw Error(folder + " is not one of the " + std::to_string(classes->size()) +
                    " classes (the train folders' names, or --class-names)");
      classes->push_back(name);
      it = classes->end() - 1;
    }
    std::vector<std::string> files;
    walk(folder, folders, &files, &other, &first_other);
    if (files.empty()) throw Error("class folder " + folder + " holds no .jpg, .jpeg or .png file");
    for (std::string& f : files) items.push_back({std::move(f), it - classes->begin()});
  }
  if (items.empty()) throw Error(split_dir + ": no class folders with images (expected " + split_dir + "/CLASS/*.jpg)");
  if (other > 0)
    log::info0(fmt::format("[shard] {}: skipped {} file(s) that are not .jpg/.jpeg/.png images (first: {})", split_dir,
                           other, first_other));
  return items;
}

// Reads and decodes one file into the stored form; throws naming it.
Image load(const std::string& path, const ImageOptions& opt, int channels, int height, int width) {
  const std::vector<char> bytes = read_binary_file(path);
  Image im = decode_image(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), path);
  if (im.channels == 3 && channels == 1 && opt.color != "gray")
    throw Error(path + ": a colour image in a set whose first image is gray: pass --color rgb (or --color gray to "
                "convert every image to gray)");
  im = to_channels(std::move(im), channels);
  if (opt.height > 0) return fit_image(im, height, width);
  if (im.height != height || im.width != width)
    throw Error(fmt::format("{}: {}x{} pixels, the first image is {}x{}: pass --image-size HxW to resize and crop",
                            path, im.width, im.height, width, height));
  return im;
}

class ImageSource final : public SampleSource {
 public:
  ImageSource(std::string dir, std::vector<ImageItem> items, const ImageOptions& opt, int channels, int height,
              int width, int64_t classes)
      : dir_(std::move(dir)), items_(std::move(items)), opt_(opt), channels_(channels), height_(height), width_(width) {
    spec_.sample_shape = {channels, height, width};
    spec_.dtype = DType::kUInt8;
    spec_.num_classes = classes;
    threads_ = opt.threads > 0 ? opt.threads : std::max(1u, std::thread::hardware_concurrency());
    if (opt.skip_bad) drop_bad();
    for (const ImageItem& it : items_) labels_.push_back(it.label);
    LOCKSTEP_REQUIRE(!items_.empty(), dir_ + ": no image decodes");
  }
  const DatasetSpec& spec() const override { return spec_; }
  int64_t count() const override { return static_cast<int64_t>(items_.size()); }
  const std::vector<int64_t>& labels() const override { return labels_; }
  int64_t skipped() const override { return skipped_; }
  std::string name() const override { return dir_; }

  void read(int64_t begin, int64_t n, void* out) override {
    LOCKSTEP_REQUIRE(begin >= 0 && n >= 0 && begin + n <= count(), dir_ + ": read past the last image");
    const size_t sb = spec_.sample_bytes();
    auto* dst = static_cast<uint8_t*>(out);
    parallel(begin, n, [&](int64_t i) {
      const Image im = load(items_[static_cast<size_t>(i)].path, opt_, channels_, height_, width_);
      store_chw(im, dst + static_cast<size_t>(i - begin) * sb);
    });
  }

 private:
  // Runs F(i) for i in [BEGIN, BEGIN+N) on the threads; the error of the lowest index is
  // rethrown (the same message whatever the timing).
  template <typename F>
  void parallel(int64_t begin, int64_t n, const F& f) {
    try {
      parallel_for(n, threads_, [&](int64_t k) { f(begin + k); });
    } catch (const std::exception& e) {
      throw Error(std::string(e.what()) + (opt_.skip_bad ? "" : " (--skip-bad skips files that do not decode)"));
    }
  }

  void drop_bad() {  // --skip-bad: decode everything once; keep what decodes
    std::vector<std::string> why(items_.size());
    parallel(0, static_cast<int64_t>(items_.size()), [&](int64_t i) {
      try {
        load(items_[static_cast<size_t>(i)].path, opt_, channels_, height_, width_);
      } catch (const Error& e) {
        why[static_cast<size_t>(i)] = e.what();
      }
    });
    std::vector<ImageItem> kept;
    for (size_t i = 0; i < items_.size(); ++i) {
      if (why[i].empty()) {
        kept.push_back(std::move(items_[i]));
      } else {
        log::warn("[shard] skipped (--skip-bad): " + why[i]);
        ++skipped_;
      }
    }
    items_.swap(kept);
  }

  std::string dir_;
  std::vector<ImageItem> items_;
  ImageOptions opt_;
  int channels_, height_, width_, threads_ = 1;
  DatasetSpec spec_;
  std::vector<int64_t> labels_;
  int64_t skipped_ = 0;
};

}  // namespace

std::vector<InputSplit> open_images(const std::string& dir, const ImageOptions& opt,
                                    const std::vector<std::string>& class_names, std::vector<std::string>* names,
                                    std::string* listing) {
  LOCKSTEP_REQUIRE(is_directory(dir), "images input " + dir + " is not a directory");
  LOCKSTEP_REQUIRE(opt.color == "auto" || opt.color == "gray" || opt.color == "rgb",
                   "--color must be auto, gray or rgb, not '" + opt.color + "'");
  // A train/ folder makes DIR a split layout, whatever else it holds: another folder beside it
  // (validation/, a class) made every split folder a class, test images mixed into training,
  // silently. Hidden folders are no one's.
  const bool by_split = is_directory(dir + "/train");
  for (const std::string& n : list_dir(dir))
    if (by_split && is_directory(dir + "/" + n) && !is_hidden(n) && n != "train" && n != "val" && n != "test")
      throw Error(dir + " holds train/ and also " + n + "/: a split layout is train/, val/ and test/ (rename " + n +
                  "/ to val/ or test/, or move it out); a class layout has no train/ folder");
  std::vector<std::string> classes = class_names;
  const bool define = class_names.empty();
  std::vector<std::pair<std::string, std::vector<ImageItem>>> splits;
  Folders folders;
  splits.emplace_back("train", list_split(by_split ? dir + "/train" : dir, &folders, &classes, define));
  if (define) {  // ImageFolder's ids: the folder names sorted
    std::vector<std::string> sorted = classes;
    std::sort(sorted.begin(), sorted.end());
    for (ImageItem& it : splits[0].second)
      it.label = std::find(sorted.begin(), sorted.end(), classes[static_cast<size_t>(it.label)]) - sorted.begin();
    classes = sorted;
  }
  for (const char* s : {"val", "test"})
    if (by_split && is_directory(dir + "/" + s)) splits.emplace_back(s, list_split(dir + "/" + s, &folders, &classes, false));

  // The first image (with --skip-bad: the first that decodes) fixes what --color auto and a
  // missing --image-size leave open.
  Image first;
  for (size_t i = 0; first.channels == 0; ++i) {
    const std::string& path = splits[0].second.at(i).path;
    try {
      const std::vector<char> bytes = read_binary_file(path);
      first = decode_image(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), path);
    } catch (const Error&) {
      if (!opt.skip_bad || i + 1 == splits[0].second.size()) throw;
    }
  }
  const int channels = opt.color == "rgb" ? 3 : opt.color == "gray" ? 1 : first.channels;
  const int height = opt.height > 0 ? opt.height : first.height, width = opt.width > 0 ? opt.width : first.width;

  uint64_t h = fnv1a64(dir);
  for (const auto& [split, items] : splits)
    for (const ImageItem& it : items) {
      struct stat st {};
      ::stat(it.path.c_str(), &st);
      // Nanoseconds: an image rewritten at its size within the second kept the old shards.
      h = (h ^ fnv1a64(fmt::format("{}:{}:{}:{}.{:09}", it.path, it.label, st.st_size, st.st_mtim.tv_sec,
                                   st.st_mtim.tv_nsec))) *
          1099511628211ull;
    }
  *listing = fmt::format("images={}:{:016x}", splits[0].second.size(), h);
  *names = classes;
  const bool has_val = splits.size() > 1 && splits[1].first == "val";
  std::vector<InputSplit> out;
  for (auto& [split, items] : splits) {
    auto source = std::make_unique<ImageSource>(dir + (by_split ? "/" + split : ""), std::move(items), opt, channels,
                                                height, width, static_cast<int64_t>(classes.size()));
    out.push_back({split, std::move(source), split == "train" && !has_val});
  }
  return out;
}

}  // namespace lockstep::io
