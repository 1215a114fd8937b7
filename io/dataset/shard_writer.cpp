// shard_writer: see shard_writer.hpp.
#include "io/dataset/shard_writer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "io/util/file_util.hpp"
#include "io/util/temp_files.hpp"

namespace lockstep::io {

hid_t h5_type_of(DType t) {
  switch (t) {
    case DType::kUInt8: return H5T_NATIVE_UINT8;
    case DType::kInt16: return H5T_NATIVE_INT16;
    case DType::kFloat16: return H5T_NATIVE_UINT16;  // stored as raw IEEE half bits
    case DType::kFloat32: return H5T_NATIVE_FLOAT;
  }
  return H5T_NATIVE_UINT8;
}


ShardWriter::ShardWriter(const std::string& dir, const std::string& split, int index, int count,
                         const DatasetSpec& spec, int64_t n_samples, const WriteOptions& opt)
    : spec_(spec), total_(n_samples), histogram_(static_cast<size_t>(spec.num_classes), 0) {
  h5_quiet();
  file_name_ = shard_file_name(split, index, count);
  final_path_ = dir + "/" + file_name_;
  tmp_path_ = temp_name_for(final_path_);
  LOCKSTEP_REQUIRE(n_samples > 0, final_path_ + ": refusing to write an empty shard");
  LOCKSTEP_REQUIRE(opt.compression >= 0 && opt.compression <= 9,
                   "compression level must be 0..9, got " + std::to_string(opt.compression));
  file_ = H5Handle(H5Fcreate(tmp_path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  if (!file_.valid()) throw Error("cannot create shard " + tmp_path_ + ": " + h5_last_error());

  const hid_t f = file_.get();
  h5_write_attr_i64(f, "lockstep_format", {spec.format_version()});
  if (!opt.dataset_id.empty()) h5_write_attr_str(f, "dataset_id", opt.dataset_id);
  h5_write_attr_str(f, "name", spec.name);
  h5_write_attr_str(f, "split", split);
  h5_write_attr_i64(f, "shard_index", {index});
  h5_write_attr_i64(f, "shard_count", {count});
  h5_write_attr_i64(f, "sample_shape", spec.sample_shape);
  h5_write_attr_str(f, "dtype", dtype_name(spec.dtype));
  h5_write_attr_i64(f, "num_classes", {spec.num_classes});
  h5_write_attr_i64(f, "labeled", {spec.labeled ? 1 : 0});
  h5_write_attr_str(f, "class_names", join_lines(spec.class_names));
  if (spec.format_version() >= 3) h5_write_attr_i64(f, "frame_table", {spec.frame_table ? 1 : 0});
  if (spec.format_version() >= 2) {
    h5_write_attr_i64(f, "ragged", {spec.ragged ? 1 : 0});
    h5_write_attr_i64(f, "max_target_length", {spec.max_target_length});
    h5_write_attr_str(f, "tokens", join_lines(spec.tokens));
  }

  std::vector<hsize_t> dims{static_cast<hsize_t>(n_samples)};
  for (const int64_t d : spec.sample_shape) dims.push_back(static_cast<hsize_t>(d));
  int64_t chunk = opt.chunk_samples;
  if (chunk <= 0)  // ~1 MiB of samples; a frame table's rows are small: 4096 clips a chunk
    chunk = spec.frame_table ? 4096 : std::max<int64_t>(1, (1 << 20) / static_cast<int64_t>(spec.sample_bytes()));
  chunk = std::min(chunk, n_samples);
  std::vector<hsize_t> chunk_dims = dims;
  chunk_dims[0] = static_cast<hsize_t>(chunk);

  // The sample bytes: /samples [N, shape...], or a frame table's /frames [F, C, H, W], growing
  // as frames are appended, T frames a chunk (at most 256 KiB): clips are stored shuffled, so
  // a clip's read (a run of about T rows) touches 1-2 chunks, about twice the bytes it needs.
  std::vector<hsize_t> sdims = dims, smax = dims, schunk = chunk_dims;
  if (spec.frame_table) {
    sdims = smax = schunk = {0, dims[1], dims[3], dims[4]};
    smax[0] = H5S_UNLIMITED;
    schunk[0] = static_cast<hsize_t>(std::clamp<int64_t>(
        std::min<int64_t>(spec.clip_length(), static_cast<int64_t>((size_t{256} << 10) / spec.frame_bytes())), 1, 4096));
  }
  H5Handle dcpl(H5_CHECK(H5Pcreate(H5P_DATASET_CREATE)));
  H5_CHECK(H5Pset_chunk(dcpl.get(), static_cast<int>(schunk.size()), schunk.data()));
  if (opt.compression > 0) {
    H5_CHECK(H5Pset_shuffle(dcpl.get()));
    H5_CHECK(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(opt.compression)));
  }
  if (opt.chunk_checksums) H5_CHECK(H5Pset_fletcher32(dcpl.get()));
  H5Handle space(H5_CHECK(H5Screate_simple(static_cast<int>(sdims.size()), sdims.data(), smax.data())));
  samples_ = H5Handle(H5_CHECK(H5Dcreate2(f, spec.frame_table ? kFramesDataset : kSamplesDataset,
                                          h5_type_of(spec.dtype), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT)));

  // The per-sample integer datasets: /labels [N], /lengths [N], /targets [N, L], chunked
  // like /samples and checksummed the same way.
  const auto int_dataset = [&](const char* name, hsize_t width, hid_t type = H5T_STD_I64LE) {
    std::vector<hsize_t> d{dims[0]}, c{chunk_dims[0]};
    if (width > 0) {
      d.push_back(width);
      c.push_back(width);
    }
    H5Handle cpl(H5_CHECK(H5Pcreate(H5P_DATASET_CREATE)));
    H5_CHECK(H5Pset_chunk(cpl.get(), static_cast<int>(c.size()), c.data()));
    if (opt.compression > 0 && width > 0) H5_CHECK(H5Pset_deflate(cpl.get(), static_cast<unsigned>(opt.compression)));
    if (opt.chunk_checksums) H5_CHECK(H5Pset_fletcher32(cpl.get()));
    H5Handle sp(H5_CHECK(H5Screate_simple(static_cast<int>(d.size()), d.data(), nullptr)));
    return H5Handle(H5_CHECK(H5Dcreate2(f, name, type, sp.get(), H5P_DEFAULT, cpl.get(), H5P_DEFAULT)));
  };
  if (spec.frame_table) frame_rows_ = int_dataset(kClipFramesDataset, static_cast<hsize_t>(spec.clip_length()), H5T_STD_I32LE);
  if (spec.labeled) labels_ = int_dataset(kLabelsDataset, 0);
  if (spec.ragged) lengths_ = int_dataset(kLengthsDataset, 0);
  if (spec.sequence_targets()) targets_ = int_dataset(kTargetsDataset, static_cast<hsize_t>(spec.max_target_length));
}

ShardWriter::~ShardWriter() {
  if (committed_) return;
  samples_.reset();
  labels_.reset();
  lengths_.reset();
  targets_.reset();
  frame_rows_.reset();
  file_.reset();
  remove_file(tmp_path_);
}

void ShardWriter::append(const void* samples, const int64_t* records, int64_t n) {
  LOCKSTEP_REQUIRE(!spec_.frame_table, final_path_ + ": a frame table takes frames and clip rows, not samples");
  LOCKSTEP_REQUIRE(written_ + n <= total_, final_path_ + ": more samples appended than declared");
  validate_samples(spec_, samples, records, n, written_, final_path_);
  const RowSelection rows = select_rows(samples_.get(), written_, n);
  H5_CHECK(H5Dwrite(samples_.get(), h5_type_of(spec_.dtype), rows.memory.get(), rows.file.get(), H5P_DEFAULT, samples));
  append_records(records, n);
}

int64_t ShardWriter::append_frames(const void* frames, int64_t n) {
  LOCKSTEP_REQUIRE(spec_.frame_table, final_path_ + ": frames are for frame tables");
  LOCKSTEP_REQUIRE(frames_ + n <= int64_t{INT32_MAX},
                   final_path_ + ": over 2^31 distinct frames in one shard: import into more --shards");
  const int64_t first = frames_;
  if (n == 0) return first;
  H5Handle space(H5_CHECK(H5Dget_space(samples_.get())));
  std::vector<hsize_t> dims(4);
  H5_CHECK(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr));
  dims[0] = static_cast<hsize_t>(frames_ + n);
  H5_CHECK(H5Dset_extent(samples_.get(), dims.data()));
  const RowSelection rows = select_rows(samples_.get(), frames_, n);
  H5_CHECK(H5Dwrite(samples_.get(), h5_type_of(spec_.dtype), rows.memory.get(), rows.file.get(), H5P_DEFAULT, frames));
  frames_ += n;
  return first;
}

void ShardWriter::append_clips(const int32_t* frame_rows, const int64_t* records, int64_t n) {
  LOCKSTEP_REQUIRE(spec_.frame_table, final_path_ + ": clip rows are for frame tables");
  LOCKSTEP_REQUIRE(written_ + n <= total_, final_path_ + ": more samples appended than declared");
  const int64_t t_len = spec_.clip_length();
  for (int64_t i = 0; i < n * t_len; ++i)
    LOCKSTEP_REQUIRE(frame_rows[i] >= 0 && frame_rows[i] < frames_,
                     final_path_ + ": clip " + std::to_string(written_ + i / t_len) + " names frame row " +
                         std::to_string(frame_rows[i]) + " of " + std::to_string(frames_) + " written");
  validate_samples(spec_, nullptr, records, n, written_, final_path_);  // integer samples: the records only
  const RowSelection rows = select_rows(frame_rows_.get(), written_, n);
  H5_CHECK(H5Dwrite(frame_rows_.get(), H5T_NATIVE_INT32, rows.memory.get(), rows.file.get(), H5P_DEFAULT, frame_rows));
  append_records(records, n);
}

void ShardWriter::append_records(const int64_t* records, int64_t n) {
  const int64_t w = spec_.record_width();
  for (int64_t i = 0; spec_.labeled && i < n; ++i) ++histogram_[static_cast<size_t>(records[i * w])];
  // Each integer dataset takes its columns of the records.
  const auto write_columns = [&](const H5Handle& d, int64_t first_col, int64_t cols) {
    std::vector<int64_t> buf(static_cast<size_t>(n * cols));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < cols; ++c) buf[static_cast<size_t>(i * cols + c)] = records[i * w + first_col + c];
    const RowSelection r = select_rows(d.get(), written_, n);
    H5_CHECK(H5Dwrite(d.get(), H5T_NATIVE_INT64, r.memory.get(), r.file.get(), H5P_DEFAULT, buf.data()));
  };
  if (spec_.labeled) write_columns(labels_, 0, 1);
  if (spec_.ragged) write_columns(lengths_, DatasetSpec::kLengthColumn, 1);
  if (spec_.sequence_targets()) write_columns(targets_, spec_.targets_column(), spec_.max_target_length);
  written_ += n;
}

void ShardWriter::set_stats(const std::vector<double>& mean, const std::vector<double>& std) {
  spec_.mean = mean;
  spec_.std = std;
}

ShardEntry ShardWriter::finish() {
  LOCKSTEP_REQUIRE(written_ == total_, final_path_ + ": " + std::to_string(written_) + " of " +
                                           std::to_string(total_) + " samples written");
  LOCKSTEP_REQUIRE(!spec_.frame_table || frames_ > 0, final_path_ + ": a frame table without frames");
  h5_write_attr_f64(file_.get(), "mean", spec_.mean);
  h5_write_attr_f64(file_.get(), "std", spec_.std);
  // Every close checked, the file last (it flushes): a dataset's close writes its cached
  // chunks, and a full disk there left holes that the manifest's CRC then vouched for.
  for (H5Handle* h : {&samples_, &labels_, &lengths_, &targets_, &frame_rows_, &file_}) H5_CHECK(h->close());
  ShardEntry e;
  e.file = file_name_;
  e.count = total_;
  e.histogram = histogram_;
  e.crc32 = crc32_of_file(tmp_path_);
  e.frames = spec_.frame_table ? frames_ : 0;
  fsync_path(tmp_path_);
  finished_ = true;
  return e;
}

void ShardWriter::commit() {
  LOCKSTEP_REQUIRE(finished_, final_path_ + ": commit before finish");
  if (std::rename(tmp_path_.c_str(), final_path_.c_str()) != 0)
    throw Error("cannot rename " + tmp_path_ + " to " + final_path_ + ": " + std::strerror(errno));
  committed_ = true;
}

SplitEntry write_split(const std::string& dir, const std::string& split, const DatasetSpec& spec,
                       const void* samples, const int64_t* records, int64_t n, int shards,
                       const WriteOptions& opt) {
  LOCKSTEP_REQUIRE(shards >= 1, "shard count must be at least 1");
  LOCKSTEP_REQUIRE(n >= shards, "split '" + split + "' has " + std::to_string(n) +
                                    " samples, fewer than " + std::to_string(shards) + " shards");
  SplitEntry out;
  const auto* bytes = static_cast<const unsigned char*>(samples);
  for (int s = 0; s < shards; ++s) {
    const int64_t begin = n * s / shards, end = n * (s + 1) / shards;
    ShardWriter w(dir, split, s, shards, spec, end - begin, opt);
    // Append in slices so the float check and hyperslab writes stay cache-sized.
    const int64_t slice = 4096;
    for (int64_t i = begin; i < end; i += slice) {
      const int64_t k = std::min(slice, end - i);
      w.append(bytes + static_cast<size_t>(i) * spec.sample_bytes(), records + i * spec.record_width(), k);
    }
    out.shards.push_back(w.finish());
    w.commit();
  }
  fsync_path(dir);
  return out;
}

}  // namespace lockstep::io
