// hdf5_import: see hdf5_import.hpp.
#include "io/import/hdf5_import.hpp"

#include <algorithm>
#include <cstdint>

#include "io/util/file_util.hpp"
#include "io/util/h5.hpp"
#include "io/dataset/shard_writer.hpp"

namespace lockstep::io {
namespace {

class Hdf5Source final : public SampleSource {
 public:
  Hdf5Source(const std::string& path, const std::string& samples, const std::string& labels) : path_(path) {
    h5_quiet();
    LOCKSTEP_REQUIRE(path_exists(path), "hdf5 input " + path + " does not exist");
    require_regular_file(path);
    LOCKSTEP_REQUIRE(H5Fis_hdf5(path.c_str()) > 0, path + ": not an HDF5 file");
    file_ = H5Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    LOCKSTEP_REQUIRE(file_.valid(), path + ": cannot open: " + h5_last_error());
    spec_.labeled = labels != "none";
    for (const std::string& name : {samples, labels})
      LOCKSTEP_REQUIRE(name == "none" || H5Lexists(file_.get(), name.c_str(), H5P_DEFAULT) > 0,
                       path + ": no dataset '" + name + "' (set --samples-dataset / --labels-dataset)");
    samples_ = open_dataset(samples, "--samples-dataset");

    H5Handle space(H5_CHECK(H5Dget_space(samples_.get())));
    const int rank = H5_CHECK(H5Sget_simple_extent_ndims(space.get()));
    LOCKSTEP_REQUIRE(rank >= 1, path + ": dataset '" + samples + "' is a scalar");
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5_CHECK(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr));
    count_ = static_cast<int64_t>(dims[0]);
    spec_.sample_shape.assign(dims.begin() + 1, dims.end());
    if (spec_.sample_shape.empty()) spec_.sample_shape = {1};

    H5Handle type(H5_CHECK(H5Dget_type(samples_.get())));
    const H5T_class_t cls = H5Tget_class(type.get());
    const size_t size = H5Tget_size(type.get());
    if (cls == H5T_INTEGER && size == 1 && H5Tget_sign(type.get()) == H5T_SGN_NONE) {
      spec_.dtype = DType::kUInt8;
    } else if (cls == H5T_INTEGER && size == 2 && H5Tget_sign(type.get()) == H5T_SGN_2) {
      spec_.dtype = DType::kInt16;
    } else if (cls == H5T_FLOAT) {
      spec_.dtype = DType::kFloat32;  // HDF5 converts half/double on read
    } else {
      throw Error(path + ": dataset '" + samples + "' has a sample type lockstep does not store "
                  "(uint8, int16 or any float)");
    }

    LOCKSTEP_REQUIRE(count_ > 0, path + ": dataset '" + samples + "' is empty");
    // Declared, never written: a 10 KB file declaring 10^9 samples in chunks it never wrote
    // took 8 GB before any check (a hostile finding). Every sample must be stored data: each
    // chunk written (a compressed chunk is smaller than its samples, so HDF5's
    // H5Dget_space_status cannot tell), a contiguous dataset allocated.
    const std::string unwritten = unwritten_samples(dims);
    LOCKSTEP_REQUIRE(unwritten.empty(), path + ": dataset '" + samples + "' declares " + std::to_string(count_) +
                                            " samples but " + unwritten +
                                            " (its unwritten parts would read as fill values)");
    if (spec_.labeled) {  // checked before anything the size of the count is allocated
      H5Handle lset = open_dataset(labels, "--labels-dataset");
      H5Handle lspace(H5_CHECK(H5Dget_space(lset.get())));
      LOCKSTEP_REQUIRE(H5Sget_simple_extent_ndims(lspace.get()) == 1 &&
                           H5Sget_simple_extent_npoints(lspace.get()) == count_,
                       path + ": dataset '" + labels + "' is not one label per sample (" + std::to_string(count_) + ")");
      H5Handle ltype(H5_CHECK(H5Dget_type(lset.get())));
      LOCKSTEP_REQUIRE(H5Tget_class(ltype.get()) == H5T_INTEGER, path + ": labels '" + labels + "' are not integers");
      labels_.assign(static_cast<size_t>(count_), 0);
      H5_CHECK(H5Dread(lset.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels_.data()));
      for (size_t i = 0; i < labels_.size(); ++i) {
        const int64_t l = labels_[i];
        // HDF5 clamps an unsigned label above 2^63 to INT64_MAX; l + 1 then overflowed.
        LOCKSTEP_REQUIRE(l >= 0 && l < kMaxClasses,
                         path + ": label " + (l == INT64_MAX ? std::string(">= 2^63") : std::to_string(l)) +
                             " of sample " + std::to_string(i) + " is not a class id in [0, " +
                             std::to_string(kMaxClasses) + ")");
        spec_.num_classes = std::max(spec_.num_classes, l + 1);
      }
    } else {
      labels_.assign(static_cast<size_t>(count_), 0);
    }
  }

  const DatasetSpec& spec() const override { return spec_; }
  int64_t count() const override { return count_; }
  const std::vector<int64_t>& labels() const override { return labels_; }
  std::string name() const override { return path_; }

  void read(int64_t begin, int64_t n, void* out) override {
    const RowSelection rows = select_rows(samples_.get(), begin, n);  // follows the file's own rank
    if (H5Dread(samples_.get(), h5_type_of(spec_.dtype), rows.memory.get(), rows.file.get(), H5P_DEFAULT, out) < 0)
      throw Error(path_ + ": cannot read samples " + std::to_string(begin) + ".." + std::to_string(begin + n) +
                  ": " + h5_last_error());
  }

 private:
  // NAME in the file as a dataset; refused naming the file and OPTION when it is a group or a
  // named type (HDF5's own "unable to open dataset" named neither).
  H5Handle open_dataset(const std::string& name, const char* option) {
    const std::string what = std::string(std::string(option) == "--samples-dataset" ? "samples" : "labels");
    H5Handle object(H5Oopen(file_.get(), name.c_str(), H5P_DEFAULT));
    LOCKSTEP_REQUIRE(object.valid(), path_ + ": '" + name + "' cannot be opened (a link to nothing?): " + h5_last_error() +
                                         " (" + option + ")");
    const H5I_type_t type = H5Iget_type(object.get());
    LOCKSTEP_REQUIRE(type == H5I_DATASET, path_ + ": '" + name + "' is " +
                                              (type == H5I_GROUP ? "a group" : "not a dataset") + ", not a dataset of " +
                                              what + " (" + option + ")");
    return H5Handle(H5_CHECK(H5Dopen2(file_.get(), name.c_str(), H5P_DEFAULT)));
  }

  // Why the samples dataset, of extent DIMS, is not all stored data ("" when it is).
  std::string unwritten_samples(const std::vector<hsize_t>& dims) {
    H5Handle dcpl(H5_CHECK(H5Dget_create_plist(samples_.get())));
    if (H5Pget_layout(dcpl.get()) == H5D_CHUNKED) {
      std::vector<hsize_t> chunk(dims.size());
      H5_CHECK(H5Pget_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()));
      hsize_t expected = 1, written = 0;
      for (size_t i = 0; i < dims.size(); ++i) expected *= (dims[i] + chunk[i] - 1) / std::max<hsize_t>(1, chunk[i]);
      H5Handle space(H5_CHECK(H5Dget_space(samples_.get())));
      H5_CHECK(H5Dget_num_chunks(samples_.get(), space.get(), &written));
      return written == expected ? "" : std::to_string(written) + " of its " + std::to_string(expected) +
                                            " chunks were ever written";
    }
    H5D_space_status_t status{};
    H5_CHECK(H5Dget_space_status(samples_.get(), &status));
    return status == H5D_SPACE_STATUS_NOT_ALLOCATED ? "none was ever written" : "";
  }

  std::string path_;
  DatasetSpec spec_;
  int64_t count_ = 0;
  std::vector<int64_t> labels_;
  H5Handle file_, samples_;
};

}  // namespace

std::unique_ptr<SampleSource> open_hdf5_source(const std::string& path, const std::string& samples_dataset,
                                               const std::string& labels_dataset) {
  return std::make_unique<Hdf5Source>(path, samples_dataset, labels_dataset);
}

}  // namespace lockstep::io
