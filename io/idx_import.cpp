// idx_import: see idx_import.hpp.
#include "io/idx_import.hpp"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <numeric>

#include "core/error.hpp"
#include "io/file_util.hpp"
#include "io/sample_order.hpp"

namespace lockstep::io {
namespace {

std::string find_idx(const std::string& dir, const std::string& stem) {
  for (const std::string& name : {stem, stem + ".gz"})
    if (path_exists(dir + "/" + name)) return dir + "/" + name;
  return "";
}

class GzFile {
 public:
  explicit GzFile(const std::string& path) : f_(gzopen(path.c_str(), "rb")) {
    LOCKSTEP_REQUIRE(f_ != nullptr, "cannot open " + path);
  }
  ~GzFile() { gzclose(f_); }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;
  gzFile get() const { return f_; }

 private:
  gzFile f_;
};

struct Split {
  std::vector<unsigned char> samples;
  std::vector<int64_t> labels;
  int64_t n = 0;
  int64_t rows = 0, cols = 0;
};

Split read_split(const std::string& images, const std::string& labels) {
  const IdxArray img = read_idx(images);
  const IdxArray lab = read_idx(labels);
  LOCKSTEP_REQUIRE(img.dims.size() == 3, images + ": expected a 3-d image array, got " +
                                             std::to_string(img.dims.size()) + "-d");
  LOCKSTEP_REQUIRE(lab.dims.size() == 1, labels + ": expected a 1-d label array");
  LOCKSTEP_REQUIRE(img.dims[0] == lab.dims[0], images + " has " + std::to_string(img.dims[0]) +
                                                   " images but " + labels + " has " +
                                                   std::to_string(lab.dims[0]) + " labels");
  Split s;
  s.n = img.dims[0];
  s.rows = img.dims[1];
  s.cols = img.dims[2];
  s.samples = img.data;
  s.labels.assign(lab.data.begin(), lab.data.end());
  return s;
}

void shuffle_and_limit(Split& s, size_t sample_bytes, bool shuffle, uint64_t seed, int64_t limit,
                       int split_id) {
  std::vector<int64_t> order(static_cast<size_t>(s.n));
  if (shuffle) {
    order = epoch_permutation(s.n, seed, /*epoch=*/-1, split_id);
  } else {
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  const int64_t n = limit > 0 ? std::min(limit, s.n) : s.n;
  std::vector<unsigned char> samples(static_cast<size_t>(n) * sample_bytes);
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<size_t>(order[static_cast<size_t>(i)]);
    std::copy_n(s.samples.data() + k * sample_bytes, sample_bytes, samples.data() + i * sample_bytes);
    labels[static_cast<size_t>(i)] = s.labels[k];
  }
  s.samples = std::move(samples);
  s.labels = std::move(labels);
  s.n = n;
}

std::string fingerprint(const std::vector<std::string>& files, const ImportOptions& opt) {
  std::string fp = "idx-v1";
  for (const std::string& f : files) {
    struct stat st{};
    ::stat(f.c_str(), &st);
    fp += "|" + f + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtime);
  }
  fp += "|shards=" + std::to_string(opt.shards) + "|limit=" + std::to_string(opt.limit) +
        "|shuffle=" + std::to_string(opt.shuffle) + "|seed=" + std::to_string(opt.seed) +
        "|deflate=" + std::to_string(opt.write.compression) +
        "|chunk=" + std::to_string(opt.write.chunk_samples) + "|name=" + opt.name;
  for (const auto& c : opt.class_names) fp += "," + c;
  return fp;
}

bool up_to_date(const std::string& dir, const std::string& fp) {
  if (!path_exists(dir + "/" + kManifestName)) return false;
  try {
    const Manifest m = read_manifest(dir);
    if (m.source_fingerprint != fp) return false;
    for (const auto& [name, split] : m.splits)
      for (const auto& s : split.shards)
        if (!path_exists(dir + "/" + s.file)) return false;
    return true;
  } catch (const Error&) {
    return false;  // unreadable manifest: redo the import
  }
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
    a.dims.push_back(d);
    total *= d;
  }
  a.data.resize(static_cast<size_t>(total));
  int64_t done = 0;
  while (done < total) {
    const unsigned want = static_cast<unsigned>(std::min<int64_t>(total - done, 1 << 30));
    const int got = gzread(f.get(), a.data.data() + done, want);
    LOCKSTEP_REQUIRE(got > 0, path + ": truncated IDX data (" + std::to_string(done) + " of " +
                                  std::to_string(total) + " bytes)");
    done += got;
  }
  return a;
}

ImportResult import_idx(const ImportOptions& opt) {
  const std::string& in = opt.input_dir;
  LOCKSTEP_REQUIRE(is_directory(in), "idx input " + in + " is not a directory");
  const std::string tr_img = find_idx(in, "train-images-idx3-ubyte");
  const std::string tr_lab = find_idx(in, "train-labels-idx1-ubyte");
  LOCKSTEP_REQUIRE(!tr_img.empty() && !tr_lab.empty(),
                   in + ": no train-images-idx3-ubyte[.gz] / train-labels-idx1-ubyte[.gz]");
  const std::string te_img = find_idx(in, "t10k-images-idx3-ubyte");
  const std::string te_lab = find_idx(in, "t10k-labels-idx1-ubyte");
  const bool has_test = !te_img.empty() && !te_lab.empty();
  std::vector<std::string> files{tr_img, tr_lab};
  if (has_test) files.insert(files.end(), {te_img, te_lab});
  const std::string fp = fingerprint(files, opt);

  ImportResult result;
  if (!opt.force && up_to_date(opt.output_dir, fp)) {
    result.manifest = read_manifest(opt.output_dir);
    result.skipped = true;
    return result;
  }

  std::vector<std::pair<std::string, Split>> splits;
  splits.emplace_back("train", read_split(tr_img, tr_lab));
  if (has_test) splits.emplace_back("test", read_split(te_img, te_lab));

  Manifest& m = result.manifest;
  m.source = "idx:" + in;
  m.source_fingerprint = fp;
  DatasetSpec& spec = m.spec;
  spec.name = opt.name;
  spec.sample_shape = {1, splits[0].second.rows, splits[0].second.cols};
  for (const auto& [name, s] : splits)
    LOCKSTEP_REQUIRE(s.rows == splits[0].second.rows && s.cols == splits[0].second.cols,
                     in + ": " + name + " images are not the size of the train images");
  spec.dtype = DType::kUInt8;
  int64_t max_label = 0;
  for (const auto& [name, s] : splits)
    for (const int64_t l : s.labels) max_label = std::max(max_label, l);
  spec.num_classes = opt.class_names.empty() ? max_label + 1
                                             : static_cast<int64_t>(opt.class_names.size());
  spec.class_names = opt.class_names;
  LOCKSTEP_REQUIRE(max_label < spec.num_classes,
                   in + ": label " + std::to_string(max_label) + " but only " +
                       std::to_string(spec.num_classes) + " class names given");
  for (size_t i = 0; i < splits.size(); ++i)
    shuffle_and_limit(splits[i].second, spec.sample_bytes(), opt.shuffle, opt.seed, opt.limit,
                      static_cast<int>(i));
  compute_channel_stats(spec, splits[0].second.samples.data(), splits[0].second.n, &spec.mean, &spec.std);

  make_dirs(opt.output_dir);
  remove_file(opt.output_dir + "/" + kManifestName);
  for (auto& [name, s] : splits)
    m.splits.emplace_back(name, write_split(opt.output_dir, name, spec, s.samples.data(),
                                            s.labels.data(), s.n, opt.shards, opt.write));
  write_manifest(opt.output_dir, m);

  for (const std::string& f : list_dir(opt.output_dir)) {
    if (f.size() < 3 || f.compare(f.size() - 3, 3, ".h5") != 0) continue;
    bool listed = false, ours = false;
    for (const auto& [name, split] : m.splits) {
      ours = ours || f.compare(0, name.size() + 1, name + "-") == 0;
      for (const auto& s : split.shards) listed = listed || s.file == f;
    }
    if (ours && !listed) remove_file(opt.output_dir + "/" + f);
  }
  return result;
}

}  // namespace lockstep::io
