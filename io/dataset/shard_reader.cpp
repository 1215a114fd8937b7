// shard_reader: see shard_reader.hpp.
#include "io/dataset/shard_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <cstdio>
#include <vector>

#include "io/dataset/frame_table.hpp"
#include "io/dataset/shard_writer.hpp"
#include "io/util/file_util.hpp"

namespace lockstep::io {
namespace {

H5Handle open_shard(const std::string& path) {
  h5_quiet();
  LOCKSTEP_REQUIRE(path_exists(path), path + ": shard file is missing");
  require_regular_file(path);  // first: H5Fis_hdf5 on a FIFO waits for a writer, forever
  const htri_t is_h5 = H5Fis_hdf5(path.c_str());
  LOCKSTEP_REQUIRE(is_h5 > 0, path + ": not an HDF5 file (truncated or wrong file?)");
  H5Handle f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  LOCKSTEP_REQUIRE(f.valid(), path + ": cannot open as HDF5 (truncated or corrupt file?): " + h5_last_error());
  return f;
}

H5Handle open_dataset(hid_t file, const char* name, const std::string& path) {
  LOCKSTEP_REQUIRE(H5Lexists(file, name, H5P_DEFAULT) > 0,
                   path + ": no dataset '/" + name + "' (not a lockstep shard?)");
  H5Handle d(H5Dopen2(file, name, H5P_DEFAULT));
  LOCKSTEP_REQUIRE(d.valid(), path + ": cannot open dataset '/" + name + "': " + h5_last_error());
  return d;
}

std::vector<hsize_t> dims_of(hid_t dataset) {
  H5Handle space(H5_CHECK(H5Dget_space(dataset)));
  const int rank = H5_CHECK(H5Sget_simple_extent_ndims(space.get()));
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5_CHECK(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr));
  return dims;
}

std::string shape_str(const std::vector<int64_t>& s) { return shape_text(s); }

// Whether DATASET's stored type is exactly MEMORY_TYPE's kind (class, size, sign), so a
// read converts nothing.
bool same_type(hid_t dataset, hid_t memory_type) {
  H5Handle t(H5_CHECK(H5Dget_type(dataset)));
  if (H5Tget_class(t.get()) != H5Tget_class(memory_type) || H5Tget_size(t.get()) != H5Tget_size(memory_type))
    return false;
  return H5Tget_class(t.get()) != H5T_INTEGER || H5Tget_sign(t.get()) == H5Tget_sign(memory_type);
}

std::string type_text(hid_t dataset) {
  H5Handle t(H5_CHECK(H5Dget_type(dataset)));
  const H5T_class_t cls = H5Tget_class(t.get());
  const std::string bits = std::to_string(8 * H5Tget_size(t.get()));
  if (cls == H5T_FLOAT) return "float" + bits;
  if (cls == H5T_INTEGER) return (H5Tget_sign(t.get()) == H5T_SGN_NONE ? "uint" : "int") + bits;
  return "a non-numeric type";
}

bool has_fletcher32(hid_t dataset) {
  H5Handle dcpl(H5_CHECK(H5Dget_create_plist(dataset)));
  const int n = H5Pget_nfilters(dcpl.get());
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0;
    size_t nelem = 0;
    if (H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &nelem, nullptr, 0, nullptr, nullptr) ==
        H5Z_FILTER_FLETCHER32)
      return true;
  }
  return false;
}

}  // namespace

ShardFile::ShardFile(const std::string& path, const DatasetSpec& spec, const ShardEntry* entry,
                     const std::string& dataset_id)
    : path_(path), spec_(spec) {
  const int64_t expected_count = entry ? entry->count : -1;
  file_ = open_shard(path);
  if (spec.frame_table) {
    // /frames [F, C, H, W] and /clip_frames [N, T] int32 make the samples [N, C, T, H, W].
    samples_ = open_dataset(file_.get(), kFramesDataset, path);
    const auto fdims = dims_of(samples_.get());
    const std::vector<int64_t> frame(fdims.begin() + (fdims.empty() ? 0 : 1), fdims.end());
    const std::vector<int64_t>& s = spec.sample_shape;
    LOCKSTEP_REQUIRE(fdims.size() == 4 && frame == std::vector<int64_t>({s[0], s[2], s[3]}),
                     path + ": frame shape " + shape_str(frame) + " differs from the dataset's clips " + shape_str(s));
    frames_ = static_cast<int64_t>(fdims[0]);
    frame_rows_ = open_dataset(file_.get(), kClipFramesDataset, path);
    const auto rdims = dims_of(frame_rows_.get());
    LOCKSTEP_REQUIRE(rdims.size() == 2 && static_cast<int64_t>(rdims[1]) == spec.clip_length(),
                     path + ": /clip_frames does not hold " + std::to_string(spec.clip_length()) + " frames per clip");
    LOCKSTEP_REQUIRE(same_type(frame_rows_.get(), H5T_NATIVE_INT32),
                     path + ": /clip_frames is stored as " + type_text(frame_rows_.get()) + ", expected int32");
    LOCKSTEP_REQUIRE(!entry || entry->frames == frames_, path + ": holds " + std::to_string(frames_) +
                                                             " frames, manifest says " +
                                                             std::to_string(entry ? entry->frames : 0));
    count_ = static_cast<int64_t>(rdims[0]);
  } else {
    samples_ = open_dataset(file_.get(), kSamplesDataset, path);
    const auto sdims = dims_of(samples_.get());
    std::vector<int64_t> shape(sdims.begin() + (sdims.empty() ? 0 : 1), sdims.end());
    LOCKSTEP_REQUIRE(!sdims.empty() && shape == spec.sample_shape,
                     path + ": sample shape " + shape_str(shape) + " differs from the dataset's " +
                         shape_str(spec.sample_shape));
    count_ = static_cast<int64_t>(sdims[0]);
  }
  if (spec.labeled) {
    labels_ = open_dataset(file_.get(), kLabelsDataset, path);
    const auto ldims = dims_of(labels_.get());
    LOCKSTEP_REQUIRE(ldims.size() == 1 && static_cast<int64_t>(ldims[0]) == count_,
                     path + ": " + std::to_string(count_) + " samples but labels of another length");
  }
  const auto open_ints = [&](const char* name, int64_t width) {
    H5Handle d = open_dataset(file_.get(), name, path);
    const auto dims = dims_of(d.get());
    const std::vector<hsize_t> want = width > 0 ? std::vector<hsize_t>{static_cast<hsize_t>(count_), static_cast<hsize_t>(width)}
                                                : std::vector<hsize_t>{static_cast<hsize_t>(count_)};
    LOCKSTEP_REQUIRE(dims == want, path + ": /" + name + " does not have one entry" + (width > 0 ? " row" : "") +
                                       " per sample (" + std::to_string(count_) + " samples)");
    LOCKSTEP_REQUIRE(same_type(d.get(), H5T_NATIVE_INT64),
                     path + ": /" + name + " is stored as " + type_text(d.get()) + ", expected int64");
    return d;
  };
  if (spec.ragged) lengths_ = open_ints(kLengthsDataset, 0);
  if (spec.sequence_targets()) targets_ = open_ints(kTargetsDataset, spec.max_target_length);
  LOCKSTEP_REQUIRE(count_ > 0, path + ": empty shard");
  LOCKSTEP_REQUIRE(expected_count < 0 || expected_count == count_,
                   path + ": holds " + std::to_string(count_) + " samples, manifest says " +
                       std::to_string(expected_count));
  const std::string dtype = h5_has_attr(file_.get(), "dtype") ? h5_read_attr_str(file_.get(), "dtype") : "(none)";
  LOCKSTEP_REQUIRE(dtype == dtype_name(spec.dtype),
                   path + ": sample dtype " + dtype + " differs from the dataset's " + dtype_name(spec.dtype));
  LOCKSTEP_REQUIRE(same_type(samples_.get(), h5_type_of(spec.dtype)),
                   path + (spec.frame_table ? ": /frames" : ": /samples") + " is stored as " +
                       type_text(samples_.get()) + ", the manifest says " +
                       dtype_name(spec.dtype) + " (refusing to convert: values would be clamped)");
  LOCKSTEP_REQUIRE(!spec.labeled || same_type(labels_.get(), H5T_NATIVE_INT64),
                   path + ": /labels is stored as " + (spec.labeled ? type_text(labels_.get()) : "") +
                       ", expected int64");
  if (!dataset_id.empty()) {
    const std::string id = h5_has_attr(file_.get(), "dataset_id") ? h5_read_attr_str(file_.get(), "dataset_id") : "";
    LOCKSTEP_REQUIRE(id == dataset_id, path + ": shard of another import (dataset_id '" + id + "', the manifest's is '" +
                                           dataset_id + "'): the file was replaced after `lockstep shard`");
  }
  if (entry && entry->index >= 0 && h5_has_attr(file_.get(), "split")) {
    const std::string split = h5_read_attr_str(file_.get(), "split");
    const int64_t index = h5_read_attr_i64(file_.get(), "shard_index").at(0);
    const int64_t of = h5_read_attr_i64(file_.get(), "shard_count").at(0);
    LOCKSTEP_REQUIRE(split == entry->split && index == entry->index && of == entry->of,
                     fmt::format("{}: shard {} of {} of split '{}', but the manifest lists it as shard {} of {} of split "
                                 "'{}' (a manifest edited by hand, or shard files renamed: samples would be read in "
                                 "another order or as another split)",
                                 path, index, of, split, entry->index, entry->of, entry->split));
  }
  if (!spec.frame_table) chunks_ = ChunkReader::open(file_.get(), samples_.get(), h5_type_of(spec.dtype), spec.sample_bytes());
  chunk_checksums_ = has_fletcher32(samples_.get()) && (!spec.labeled || has_fletcher32(labels_.get())) &&
                     (!spec.ragged || has_fletcher32(lengths_.get())) &&
                     (!spec.sequence_targets() || has_fletcher32(targets_.get())) &&
                     (!spec.frame_table || has_fletcher32(frame_rows_.get()));
  if (!chunk_checksums_ && entry) {
    const uint32_t crc = crc32_of_file(path);
    char want[16], got[16];
    std::snprintf(want, sizeof want, "%08x", entry->crc32);
    std::snprintf(got, sizeof got, "%08x", crc);
    LOCKSTEP_REQUIRE(crc == entry->crc32, path + ": checksum mismatch (manifest crc32 " + want + ", file " + got +
                                              "): the shard changed after `lockstep shard`");
  }
}

void ShardFile::check_rows(int64_t begin, int64_t n) const {
  LOCKSTEP_REQUIRE(begin >= 0 && n >= 0 && begin + n <= count_,
                   path_ + ": read of [" + std::to_string(begin) + ", " + std::to_string(begin + n) +
                       ") is outside the shard's " + std::to_string(count_) + " samples");
}

std::string ShardFile::read_error(const char* dataset, int64_t begin, int64_t n) const {
  return path_ + ": cannot read " + dataset + " " + std::to_string(begin) + ".." + std::to_string(begin + n - 1) +
         (chunk_checksums_ ? " (a chunk fails its checksum, or the file is truncated: the shard changed after "
                             "`lockstep shard`; lockstep inspect DIR --verify checks every shard): "
                           : " (truncated or corrupt file?): ") +
         h5_last_error();
}

std::vector<int64_t> ShardFile::read_ints(const H5Handle& d, const char* name, int64_t begin, int64_t n,
                                          int64_t cols) const {
  std::vector<int64_t> buf(static_cast<size_t>(n * cols));
  const RowSelection r = select_rows(d.get(), begin, n);
  if (H5Dread(d.get(), H5T_NATIVE_INT64, r.memory.get(), r.file.get(), H5P_DEFAULT, buf.data()) < 0)
    throw Error(read_error(name, begin, n));
  return buf;
}

void ShardFile::read(int64_t begin, int64_t n, void* samples, int64_t* records) const {
  check_rows(begin, n);
  if (n == 0) return;
  ClipBlock clips;  // frame tables: read under the lock, assembled after it
  if (chunks_) {    // straight from the file, while other threads read too
    const std::string why = chunks_->read(begin, n, samples);
    if (!why.empty())
      throw Error(path_ + ": cannot read samples " + std::to_string(begin) + ".." + std::to_string(begin + n - 1) + ": " + why);
  }
  std::unique_lock<std::mutex> lock(h5_mutex());
  h5_quiet();  // may be a loader's thread
  if (spec_.frame_table) {
    clips = read_clip_block(begin, n);
  } else if (!chunks_) {
    const RowSelection rows = select_rows(samples_.get(), begin, n);
    if (H5Dread(samples_.get(), h5_type_of(spec_.dtype), rows.memory.get(), rows.file.get(), H5P_DEFAULT, samples) < 0)
      throw Error(read_error("samples", begin, n));
  }
  const int64_t w = spec_.record_width();
  // Each integer dataset fills its columns of the records.
  const auto read_columns = [&](const H5Handle& d, const char* name, int64_t first_col, int64_t cols) {
    const std::vector<int64_t> buf = read_ints(d, name, begin, n, cols);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < cols; ++c) records[i * w + first_col + c] = buf[static_cast<size_t>(i * cols + c)];
  };
  if (spec_.labeled) {
    read_columns(labels_, "labels", 0, 1);
  } else {
    for (int64_t i = 0; i < n; ++i) records[i * w] = -1;
  }
  if (spec_.ragged) read_columns(lengths_, "lengths", DatasetSpec::kLengthColumn, 1);
  if (spec_.sequence_targets()) read_columns(targets_, "targets", spec_.targets_column(), spec_.max_target_length);
  lock.unlock();
  if (spec_.frame_table) assemble_clips(spec_, clips, n, samples);
  validate_samples(spec_, samples, records, n, begin, path_);
}

ClipBlock ShardFile::read_clip_block(int64_t begin, int64_t n) const {
  const int64_t t_len = spec_.clip_length();
  ClipBlock b;
  b.rows.resize(static_cast<size_t>(n * t_len));
  const RowSelection sel = select_rows(frame_rows_.get(), begin, n);
  if (H5Dread(frame_rows_.get(), H5T_NATIVE_INT32, sel.memory.get(), sel.file.get(), H5P_DEFAULT, b.rows.data()) < 0)
    throw Error(read_error("clip_frames", begin, n));
  for (size_t i = 0; i < b.rows.size(); ++i)
    LOCKSTEP_REQUIRE(b.rows[i] >= 0 && b.rows[i] < frames_,
                     path_ + ": clip " + std::to_string(begin + static_cast<int64_t>(i) / t_len) + " names frame row " +
                         std::to_string(b.rows[i]) + ", outside the shard's " + std::to_string(frames_) + " frames");
  // The frames, read in runs (a gap of up to 4 unneeded frames is read through).
  const size_t fb = spec_.frame_bytes();
  b.runs = row_runs(std::vector<int64_t>(b.rows.begin(), b.rows.end()), 4);
  int64_t total = 0;
  for (const RowRun& r : b.runs) total += r.end - r.begin;
  b.bytes.resize(static_cast<size_t>(total) * fb);
  size_t at = 0;
  for (const RowRun& r : b.runs) {
    const RowSelection fr = select_rows(samples_.get(), r.begin, r.end - r.begin);
    if (H5Dread(samples_.get(), h5_type_of(spec_.dtype), fr.memory.get(), fr.file.get(), H5P_DEFAULT, b.bytes.data() + at) < 0)
      throw Error(read_error("frames", r.begin, r.end - r.begin));
    b.run_at.push_back(at);
    at += static_cast<size_t>(r.end - r.begin) * fb;
  }
  return b;
}

std::vector<int64_t> ShardFile::read_class_labels(int64_t begin, int64_t n) const {
  LOCKSTEP_REQUIRE(spec_.labeled, path_ + ": has no class labels");
  check_rows(begin, n);
  if (n == 0) return {};
  std::lock_guard<std::mutex> lock(h5_mutex());
  h5_quiet();
  std::vector<int64_t> labels = read_ints(labels_, "labels", begin, n, 1);
  for (size_t i = 0; i < labels.size(); ++i)
    LOCKSTEP_REQUIRE(labels[i] >= 0 && labels[i] < spec_.num_classes,
                     path_ + ": label " + std::to_string(labels[i]) + " of sample " +
                         std::to_string(begin + static_cast<int64_t>(i)) + " is outside [0, " +
                         std::to_string(spec_.num_classes) + ")");
  return labels;
}

ShardHeader read_shard_header(const std::string& path) {
  H5Handle f = open_shard(path);
  ShardHeader h;
  const hid_t id = f.get();
  h.spec.name = h5_read_attr_str(id, "name");
  h.split = h5_read_attr_str(id, "split");
  h.index = h5_read_attr_i64(id, "shard_index").at(0);
  h.count_of = h5_read_attr_i64(id, "shard_count").at(0);
  h.spec.sample_shape = h5_read_attr_i64(id, "sample_shape");
  h.spec.dtype = dtype_from_name(h5_read_attr_str(id, "dtype"));
  h.spec.num_classes = h5_read_attr_i64(id, "num_classes").at(0);
  h.spec.labeled = !h5_has_attr(id, "labeled") || h5_read_attr_i64(id, "labeled").at(0) != 0;
  h.spec.class_names = split_lines(h5_read_attr_str(id, "class_names"));
  if (h5_has_attr(id, "dataset_id")) h.dataset_id = h5_read_attr_str(id, "dataset_id");
  if (h5_has_attr(id, "ragged")) h.spec.ragged = h5_read_attr_i64(id, "ragged").at(0) != 0;
  if (h5_has_attr(id, "max_target_length")) h.spec.max_target_length = h5_read_attr_i64(id, "max_target_length").at(0);
  if (h5_has_attr(id, "tokens")) h.spec.tokens = split_lines(h5_read_attr_str(id, "tokens"));
  if (h5_has_attr(id, "frame_table")) h.spec.frame_table = h5_read_attr_i64(id, "frame_table").at(0) != 0;
  h.spec.mean = h5_read_attr_f64(id, "mean");
  h.spec.std = h5_read_attr_f64(id, "std");
  // The chunking and filters shown are those of the sample bytes: /samples, or /frames.
  H5Handle d = open_dataset(id, h.spec.frame_table ? kFramesDataset : kSamplesDataset, path);
  if (h.spec.frame_table) {
    H5Handle rows = open_dataset(id, kClipFramesDataset, path);
    h.samples = static_cast<int64_t>(dims_of(rows.get()).at(0));
    h.frames = static_cast<int64_t>(dims_of(d.get()).at(0));
  } else {
    h.samples = static_cast<int64_t>(dims_of(d.get()).at(0));
  }
  H5Handle dcpl(H5_CHECK(H5Dget_create_plist(d.get())));
  if (H5Pget_layout(dcpl.get()) == H5D_CHUNKED) {
    std::vector<hsize_t> chunk(static_cast<size_t>(H5_CHECK(H5Pget_chunk(dcpl.get(), 0, nullptr))));
    H5_CHECK(H5Pget_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()));
    h.chunk.assign(chunk.begin(), chunk.end());
  }
  const int nfilters = H5Pget_nfilters(dcpl.get());
  for (int i = 0; i < nfilters; ++i) {
    unsigned flags = 0;
    size_t nelem = 0;
    char name[64] = {0};
    const H5Z_filter_t id_f = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &nelem, nullptr,
                                             sizeof name, name, nullptr);
    (void)id_f;
    h.filters += (h.filters.empty() ? "" : "+") + std::string(name);
  }
  if (h.filters.empty()) h.filters = "none";
  return h;
}

namespace {

// The "ok ..." line of shard S of M in DIR once its bytes, samples and labels are what the
// manifest says; throws naming the file otherwise.
std::string verify_shard(const std::string& dir, const Manifest& m, const ShardEntry& s) {
  const std::string path = dir + "/" + s.file;
  LOCKSTEP_REQUIRE(path_exists(path), path + ": shard file is missing");
  const uint32_t crc = crc32_of_file(path);
  char buf[160];
  std::snprintf(buf, sizeof buf, "%08x", s.crc32);
  char got[16];
  std::snprintf(got, sizeof got, "%08x", crc);
  LOCKSTEP_REQUIRE(crc == s.crc32, path + ": checksum mismatch (manifest crc32 " + buf + ", file " + got + ")");
  ShardFile f(path, m.spec, &s, m.dataset_id);
  // Blocks of up to 1024 samples and 64 MiB (large clips: fewer), never more than the shard.
  const int64_t block = std::min<int64_t>(
      f.count(), std::clamp<int64_t>(static_cast<int64_t>((size_t{64} << 20) / m.spec.sample_bytes()), 1, 1024));
  std::vector<unsigned char> samples(m.spec.sample_bytes() * static_cast<size_t>(block));
  const int64_t w = m.spec.record_width();
  std::vector<int64_t> records(static_cast<size_t>(block * w)),
      hist(static_cast<size_t>(m.spec.labeled ? m.spec.num_classes : 0), 0);
  for (int64_t i = 0; i < f.count(); i += block) {
    const int64_t k = std::min<int64_t>(block, f.count() - i);
    f.read(i, k, samples.data(), records.data());  // checks lengths and targets too
    for (int64_t j = 0; m.spec.labeled && j < k; ++j) ++hist[static_cast<size_t>(records[static_cast<size_t>(j * w)])];
  }
  LOCKSTEP_REQUIRE(hist == s.histogram, path + ": class histogram differs from the manifest");
  std::snprintf(buf, sizeof buf, "ok  %-28s %8lld samples  crc32 %08x", s.file.c_str(), static_cast<long long>(s.count),
                s.crc32);
  return buf;
}

}  // namespace

std::vector<std::string> verify_dataset(const std::string& dir) {
  const Manifest m = read_manifest(dir);
  std::vector<std::string> lines;
  for (const auto& [split, entry] : m.splits)
    for (const auto& s : entry.shards) lines.push_back(verify_shard(dir, m, s));
  return lines;
}

std::string verify_listed_shard(const std::string& path) {
  const std::string dir = parent_dir(path), file = base_name(path);
  if (!path_exists(dir + "/manifest.json")) return "";
  const Manifest m = read_manifest(dir);
  for (const auto& [split, entry] : m.splits)
    for (const auto& s : entry.shards)
      if (s.file == file) return verify_shard(dir, m, s);
  return "";
}

}  // namespace lockstep::io
