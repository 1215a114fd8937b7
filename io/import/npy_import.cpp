// npy_import: see npy_import.hpp. An array is read through an ArrayStream: the bytes of one
// .npy, from a file or from an .npz member (libzip), front to back.
#include "io/import/npy_import.hpp"

#include <zip.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>
#include <tuple>
#include <utility>

#include "core/base/error.hpp"
#include "io/import/npy_format.hpp"
#include "io/util/file_util.hpp"

namespace lockstep::io {
namespace {

class ArrayStream {
 public:
  virtual ~ArrayStream() = default;
  // Up to N bytes into OUT; fewer only at the end. Throws naming the array on a read error.
  virtual int64_t read_some(void* out, int64_t n) = 0;
  virtual void rewind() = 0;          // back to the first byte
  virtual int64_t size() const = 0;   // bytes in all
  const std::string& what() const { return what_; }
  // Reads to the end (discarding): an .npz member's CRC-32 is checked when its end is reached.
  void finish() {
    unsigned char rest[4096];
    while (read_some(rest, sizeof rest) > 0) {
    }
  }

  void read(void* out, int64_t n) {
    auto* p = static_cast<unsigned char*>(out);
    for (int64_t done = 0; done < n;) {
      const int64_t got = read_some(p + done, n - done);
      if (got <= 0) throw Error(what_ + ": truncated (" + std::to_string(done) + " of " + std::to_string(n) + " bytes read)");
      done += got;
    }
  }

 protected:
  explicit ArrayStream(std::string what) : what_(std::move(what)) {}

 private:
  std::string what_;
};

class FileStream final : public ArrayStream {
 public:
  explicit FileStream(const std::string& path) : ArrayStream(path) {
    LOCKSTEP_REQUIRE(path_exists(path), "npy input " + path + " does not exist");
    require_regular_file(path);
    f_ = std::fopen(path.c_str(), "rb");
    LOCKSTEP_REQUIRE(f_ != nullptr, "cannot open " + path);
    size_ = file_size(path);
  }
  ~FileStream() override { std::fclose(f_); }
  FileStream(const FileStream&) = delete;
  FileStream& operator=(const FileStream&) = delete;
  int64_t read_some(void* out, int64_t n) override {
    const size_t got = std::fread(out, 1, static_cast<size_t>(n), f_);
    LOCKSTEP_REQUIRE(got > 0 || !std::ferror(f_), what() + ": read error");
    return static_cast<int64_t>(got);
  }
  void rewind() override { std::rewind(f_); }
  int64_t size() const override { return size_; }

 private:
  std::FILE* f_ = nullptr;
  int64_t size_ = 0;
};

// One member of a zip archive, opened through libzip (which inflates it and checks its CRC).
class ZipStream final : public ArrayStream {
 public:
  ZipStream(const std::string& path, const std::string& key) : ArrayStream(path + ":" + key) {
    LOCKSTEP_REQUIRE(path_exists(path), "npz input " + path + " does not exist");
    require_regular_file(path);
    int code = 0;
    zip_.reset(zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
    if (!zip_) {
      zip_error_t e;
      zip_error_init_with_code(&e, code);
      const std::string msg = zip_error_strerror(&e);
      zip_error_fini(&e);
      throw Error(path + ": not a readable .npz (zip) archive: " + msg);
    }
    index_ = zip_name_locate(zip_.get(), (key + ".npy").c_str(), 0);
    if (index_ < 0)
      throw Error(path + ": no array '" + key + "' (it holds: " + members() + "); name them as npz:" + path +
                  ":SAMPLES_KEY,LABELS_KEY");
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(zip_.get(), static_cast<zip_uint64_t>(index_), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
      throw Error(what() + ": cannot read the member's size: " + zip_strerror(zip_.get()));
    size_ = static_cast<int64_t>(std::min<zip_uint64_t>(st.size, std::numeric_limits<int64_t>::max()));
    open_member();
  }
  int64_t read_some(void* out, int64_t n) override {
    const zip_int64_t got = zip_fread(file_.get(), out, static_cast<zip_uint64_t>(n));
    if (got < 0) throw Error(what() + ": " + zip_file_strerror(file_.get()));  // a CRC mismatch among them
    return got;
  }
  void rewind() override {
    file_.reset();
    open_member();
  }
  int64_t size() const override { return size_; }

 private:
  struct CloseFile {
    void operator()(zip_file_t* f) const { zip_fclose(f); }
  };
  struct DiscardArchive {  // read-only: nothing is written back
    void operator()(zip_t* z) const { zip_discard(z); }
  };
  void open_member() {
    file_.reset(zip_fopen_index(zip_.get(), static_cast<zip_uint64_t>(index_), 0));
    if (!file_) throw Error(what() + ": cannot open the member: " + zip_strerror(zip_.get()));
  }
  std::string members() const {  // the array names, for a missing key's message
    std::string have;
    const zip_int64_t n = zip_get_num_entries(zip_.get(), 0);
    for (zip_int64_t i = 0; i < n && i < 20; ++i) {
      const char* raw = zip_get_name(zip_.get(), static_cast<zip_uint64_t>(i), 0);
      std::string name = raw != nullptr ? raw : "?";
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
      have += (have.empty() ? "" : ", ") + name;
    }
    return have.empty() ? "nothing" : have;
  }
  std::unique_ptr<zip_t, DiscardArchive> zip_;
  std::unique_ptr<zip_file_t, CloseFile> file_;
  zip_int64_t index_ = -1;
  int64_t size_ = 0;
};

// Reads the header at the stream's start; the stream is left at the first element.
NpyHeader read_header(ArrayStream& s) {
  unsigned char first[12] = {};
  const int64_t got = s.read_some(first, 12);
  const int64_t total = npy_header_bytes(first, static_cast<size_t>(std::max<int64_t>(got, 0)), s.what());
  std::vector<unsigned char> bytes(static_cast<size_t>(std::max<int64_t>(total, 12)));
  std::copy(first, first + 12, bytes.begin());
  if (total > got) s.read(bytes.data() + got, total - got);
  const NpyHeader h = parse_npy_header(bytes.data(), static_cast<size_t>(total), s.what());
  // A header's claim is checked against the bytes there before anything that size is read.
  if (s.size() - h.data_offset < h.data_bytes())
    throw Error(s.what() + ": truncated: its header claims " + std::to_string(h.data_bytes()) + " bytes of " +
                h.descr + " data, it holds " + std::to_string(std::max<int64_t>(0, s.size() - h.data_offset)));
  if (got > total) {  // a 10-byte preamble: 2 bytes of data were read with it
    s.rewind();
    std::vector<unsigned char> skip(static_cast<size_t>(total));
    s.read(skip.data(), total);
  }
  return h;
}

class NpySource final : public SampleSource {
 public:
  NpySource(std::unique_ptr<ArrayStream> samples, std::unique_ptr<ArrayStream> labels)
      : samples_(std::move(samples)), h_(read_header(*samples_)) {
    const std::string& what = samples_->what();
    LOCKSTEP_REQUIRE(!h_.shape.empty(), what + ": a 0-d array; samples need axis 0 to count them");
    count_ = h_.shape[0];
    LOCKSTEP_REQUIRE(count_ > 0, what + ": no samples (axis 0 is 0)");
    spec_.sample_shape.assign(h_.shape.begin() + 1, h_.shape.end());
    if (spec_.sample_shape.empty()) spec_.sample_shape = {1};
    for (const int64_t d : spec_.sample_shape) LOCKSTEP_REQUIRE(d > 0, what + ": a sample axis of length 0");
    spec_.dtype = npy_store_dtype(h_);
    sample_elements_ = h_.count() / count_;
    if (h_.fortran_order && h_.shape.size() > 1) {  // axis 0 fastest: no sample is contiguous
      whole_.resize(static_cast<size_t>(h_.data_bytes()));
      samples_->read(whole_.data(), h_.data_bytes());
      samples_->finish();
      npy_fortran_to_c(h_, &whole_);
    }
    labels_.assign(static_cast<size_t>(count_), 0);
    spec_.labeled = labels != nullptr;
    if (labels) read_labels(*labels);
  }

  const DatasetSpec& spec() const override { return spec_; }
  int64_t count() const override { return count_; }
  const std::vector<int64_t>& labels() const override { return labels_; }
  std::string name() const override { return samples_->what(); }

  void read(int64_t begin, int64_t n, void* out) override {
    LOCKSTEP_REQUIRE(begin >= 0 && n >= 0 && begin + n <= count_, name() + ": read past the last sample");
    const int64_t item = h_.item_bytes, per = sample_elements_ * item;
    if (!whole_.empty()) {
      npy_convert(h_, whole_.data() + begin * per, n * sample_elements_, spec_.dtype, out);
      return;
    }
    if (begin < next_) {  // out of file order: start again (the importer reads in order)
      samples_->rewind();
      read_header(*samples_);
      next_ = 0;
    }
    for (; next_ < begin;) {  // skip forward
      const int64_t k = std::min<int64_t>(begin - next_, std::max<int64_t>(1, (16 << 20) / per));
      buffer_.resize(static_cast<size_t>(k * per));
      samples_->read(buffer_.data(), k * per);
      next_ += k;
    }
    buffer_.resize(static_cast<size_t>(n * per));
    samples_->read(buffer_.data(), n * per);
    npy_convert(h_, buffer_.data(), n * sample_elements_, spec_.dtype, out);
    next_ = begin + n;
    if (next_ == count_) samples_->finish();
  }

 private:
  void read_labels(ArrayStream& s) {
    const NpyHeader h = read_header(s);
    const bool column = h.shape.size() == 1 || (h.shape.size() == 2 && h.shape[1] == 1);
    if (!column || h.shape[0] != count_) {
      std::string shape;
      for (const int64_t d : h.shape) shape += std::to_string(d) + ",";
      throw Error(s.what() + ": not one label per sample: shape (" + shape + ") for " + std::to_string(count_) +
                  " samples in " + samples_->what());
    }
    std::vector<unsigned char> raw(static_cast<size_t>(h.data_bytes()));
    s.read(raw.data(), h.data_bytes());
    s.finish();
    npy_to_int64(h, raw.data(), count_, labels_.data(), s.what());
    for (int64_t i = 0; i < count_; ++i) {
      const int64_t l = labels_[static_cast<size_t>(i)];
      LOCKSTEP_REQUIRE(l >= 0 && l <= std::numeric_limits<int32_t>::max(),
                       s.what() + ": label " + (l < 0 ? "out of range" : std::to_string(l)) + " at index " +
                           std::to_string(i) + " (classes are 0..K-1)");
      spec_.num_classes = std::max(spec_.num_classes, l + 1);
    }
  }

  std::unique_ptr<ArrayStream> samples_;
  NpyHeader h_;
  DatasetSpec spec_;
  int64_t count_ = 0, sample_elements_ = 0, next_ = 0;
  std::vector<int64_t> labels_;
  std::vector<unsigned char> whole_, buffer_;
};

// "A,B" split at its last comma (".npy" names rarely hold one); ONE is set for a lone file.
std::pair<std::string, std::string> split_last(const std::string& s, char sep) {
  const auto at = s.rfind(sep);
  if (at == std::string::npos) return {s, ""};
  return {s.substr(0, at), s.substr(at + 1)};
}

std::unique_ptr<SampleSource> open_one(const std::string& path, bool npz, const NpyKeys& keys,
                                       std::vector<std::string>* files) {
  if (!npz) {
    auto [samples, labels] = path_exists(path) ? std::pair{path, std::string()} : split_last(path, ',');
    if (samples.empty()) throw UsageError("npy:" + path + ": expected npy:SAMPLES.npy[,LABELS.npy]");
    files->push_back(samples);
    if (!labels.empty()) files->push_back(labels);
    auto stream = std::make_unique<FileStream>(samples);  // first: its errors come first
    return std::make_unique<NpySource>(std::move(stream),
                                       labels.empty() ? nullptr : std::make_unique<FileStream>(labels));
  }
  std::string file = path;
  NpyKeys k = keys;
  if (!path_exists(path) && path.find(':') != std::string::npos) {
    std::string names;
    std::tie(file, names) = split_last(path, ':');
    std::tie(k.samples, k.labels) = split_last(names, ',');
    if (k.labels.empty()) k.labels = "none";
    if (k.samples.empty()) throw UsageError("npz:" + path + ": expected npz:FILE.npz[:SAMPLES_KEY[,LABELS_KEY]]");
  }
  files->push_back(file);
  auto samples = std::make_unique<ZipStream>(file, k.samples);  // first: its errors come first
  return std::make_unique<NpySource>(std::move(samples),
                                     k.labels == "none" ? nullptr : std::make_unique<ZipStream>(file, k.labels));
}

}  // namespace

std::vector<InputSplit> open_npy(const std::vector<std::pair<std::string, std::string>>& split_paths, bool npz,
                                 const NpyKeys& default_keys, std::vector<std::string>* files) {
  std::vector<InputSplit> out;
  for (const auto& [split, path] : split_paths)
    out.push_back({split, open_one(path, npz, default_keys, files), split == "train"});
  return out;
}

}  // namespace lockstep::io
