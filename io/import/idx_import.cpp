// idx_import: see idx_import.hpp.
#include "io/import/idx_import.hpp"

#include <zlib.h>

#include <algorithm>

#include "core/base/error.hpp"
#include "io/util/file_util.hpp"

namespace lockstep::io {
namespace {

std::string find_idx(const std::string& dir, const std::string& stem) {
  for (const std::string& name : {stem, stem + ".gz"})
    if (path_exists(dir + "/" + name)) return dir + "/" + name;
  return "";
}

class GzFile {
 public:
  explicit GzFile(const std::string& path) : f_((require_regular_file(path), gzopen(path.c_str(), "rb"))) {
    LOCKSTEP_REQUIRE(f_ != nullptr, "cannot open " + path);
  }
  ~GzFile() { gzclose(f_); }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;
  gzFile get() const { return f_; }

 private:
  gzFile f_;
};

std::unique_ptr<SampleSource> read_split(const std::string& images, const std::string& labels) {
  IdxArray img = read_idx(images);
  const IdxArray lab = read_idx(labels);
  LOCKSTEP_REQUIRE(img.dims.size() == 3, images + ": expected a 3-d image array, got " +
                                             std::to_string(img.dims.size()) + "-d");
  LOCKSTEP_REQUIRE(lab.dims.size() == 1, labels + ": expected a 1-d label array");
  LOCKSTEP_REQUIRE(img.dims[0] == lab.dims[0], images + " has " + std::to_string(img.dims[0]) +
                                                   " images but " + labels + " has " +
                                                   std::to_string(lab.dims[0]) + " labels");
  DatasetSpec spec;
  spec.sample_shape = {1, img.dims[1], img.dims[2]};
  spec.dtype = DType::kUInt8;
  std::vector<int64_t> l(lab.data.begin(), lab.data.end());
  for (const int64_t v : l) spec.num_classes = std::max(spec.num_classes, v + 1);
  return std::make_unique<MemorySource>(images, spec, std::move(img.data), std::move(l));
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  GzFile f(path);
  unsigned char header[4];
  LOCKSTEP_REQUIRE(gzread(f.get(), header, 4) == 4, path + ": too short for an IDX header");
  LOCKSTEP_REQUIRE(header[0] == 0 && header[1] == 0, path + ": not an IDX file (bad magic)");
  LOCKSTEP_REQUIRE(header[2] == 0x08, path + ": IDX element type " + std::to_string(header[2]) +
                                          " is not unsigned byte (0x08)");
  const int ndim = header[3];
  LOCKSTEP_REQUIRE(ndim >= 1 && ndim <= 4, path + ": IDX with " + std::to_string(ndim) + " dimensions");
  IdxArray a;
  int64_t total = 1;
  for (int i = 0; i < ndim; ++i) {
    unsigned char b[4];
    LOCKSTEP_REQUIRE(gzread(f.get(), b, 4) == 4, path + ": truncated IDX header");
    const int64_t d = (int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) | (int64_t{b[2]} << 8) | b[3];
    LOCKSTEP_REQUIRE(d > 0, path + ": IDX dimension " + std::to_string(i) + " is zero");
    LOCKSTEP_REQUIRE(total <= (int64_t{1} << 40) / d, path + ": IDX header claims more than 2^40 elements");
    a.dims.push_back(d);
    total *= d;
  }
  // The header's claim is checked against the bytes that exist before anything that size
  // is allocated: exactly for a plain file; a .gz file grows the array only as data
  // actually decompresses, so a lying header fails as truncated, not as bad_alloc.
  const int64_t header_bytes = 4 + 4 * int64_t{ndim};
  if (gzdirect(f.get()) == 1) {  // not compressed
    const int64_t have = file_size(path) - header_bytes;
    LOCKSTEP_REQUIRE(have >= total, path + ": truncated IDX data (the header claims " + std::to_string(total) +
                                        " bytes, the file holds " + std::to_string(have) + ")");
  }
  int64_t done = 0;
  while (done < total) {
    const int64_t piece = std::min<int64_t>(total - done, 64 << 20);
    a.data.resize(static_cast<size_t>(done + piece));
    const int got = gzread(f.get(), a.data.data() + done, static_cast<unsigned>(piece));
    LOCKSTEP_REQUIRE(got > 0, path + ": truncated IDX data (" + std::to_string(done) + " of " +
                                  std::to_string(total) + " bytes)");
    done += got;
  }
  a.data.resize(static_cast<size_t>(done));
  return a;
}

std::vector<InputSplit> open_idx(const std::string& in, std::vector<std::string>* files) {
  LOCKSTEP_REQUIRE(is_directory(in), "idx input " + in + " is not a directory");
  const std::string tr_img = find_idx(in, "train-images-idx3-ubyte");
  const std::string tr_lab = find_idx(in, "train-labels-idx1-ubyte");
  LOCKSTEP_REQUIRE(!tr_img.empty() && !tr_lab.empty(),
                   in + ": no train-images-idx3-ubyte[.gz] / train-labels-idx1-ubyte[.gz]");
  const std::string te_img = find_idx(in, "t10k-images-idx3-ubyte");
  const std::string te_lab = find_idx(in, "t10k-labels-idx1-ubyte");
  std::vector<InputSplit> out;
  out.push_back({"train", read_split(tr_img, tr_lab), true});
  files->insert(files->end(), {tr_img, tr_lab});
  if (!te_img.empty() && !te_lab.empty()) {
    out.push_back({"test", read_split(te_img, te_lab), false});
    files->insert(files->end(), {te_img, te_lab});
  }
  return out;
}

}  // namespace lockstep::io
