// h5: see h5.hpp.
#include "io/util/h5.hpp"

#include <algorithm>

namespace lockstep::io {
namespace {

// HDF5 closes every file still open at exit (H5_term_library, registered with atexit).
// A file whose flush or close failed (a full disk) is left half-closed, and that exit
// cleanup then crashed inside the library (SIGSEGV, exit 139) after lockstep had
// reported the error. lockstep closes every HDF5 handle itself (RAII) before exit, so
// the library's exit cleanup is switched off, before its first call (static init).
const bool kNoExitCleanup = [] {
  H5dont_atexit();
  return true;
}();

}  // namespace

herr_t H5Handle::close() {
  if (id_ < 0) return 0;
  herr_t status = 0;
  switch (H5Iget_type(id_)) {
    case H5I_FILE: status = H5Fclose(id_); break;
    case H5I_DATASET: status = H5Dclose(id_); break;
    case H5I_DATASPACE: status = H5Sclose(id_); break;
    case H5I_DATATYPE: status = H5Tclose(id_); break;
    case H5I_ATTR: status = H5Aclose(id_); break;
    case H5I_GROUP: status = H5Gclose(id_); break;
    case H5I_GENPROP_LST: status = H5Pclose(id_); break;
    default: break;
  }
  id_ = H5I_INVALID_HID;
  return status;
}

std::mutex& h5_mutex() {
  static std::mutex mu;
  return mu;
}

void h5_quiet() {
  // HDF5's error-stack settings are per thread: each thread silences its own once.
  thread_local const bool once = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)once;
}

std::string h5_version() {
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

namespace {

struct ErrorWalk {
  std::string api;      // the message of the API call (outermost), "can't write data"
  std::string system;   // the operating system's error, "No space left on device"
  std::string file;     // the file a low-level I/O error names
};

herr_t collect(unsigned n, const H5E_error2_t* err, void* out) {
  auto* w = static_cast<ErrorWalk*>(out);
  const std::string desc = err->desc ? err->desc : "";
  if (n == 0) w->api = desc;
  if (err->min_num == H5E_SYSERRSTR && w->system.empty()) w->system = desc;
  // The file drivers' I/O errors: "... filename = '/d/x.h5', ... error message = '...'".
  const auto quoted = [&](const char* key, std::string* into) {
    const size_t at = desc.find(key);
    if (at == std::string::npos || !into->empty()) return;
    const size_t begin = at + std::char_traits<char>::length(key), end = desc.find('\'', begin);
    if (end != std::string::npos) *into = desc.substr(begin, end - begin);
  };
  quoted("filename = '", &w->file);
  quoted("error message = '", &w->system);
  return 0;
}

}  // namespace

std::string h5_last_error() {
  ErrorWalk w;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect, &w);
  std::string msg = w.api.empty() ? "unknown HDF5 error" : w.api;
  if (!w.system.empty()) msg += ": " + w.system;
  if (!w.file.empty()) msg += " (file " + w.file + ")";
  return msg;
}

[[noreturn]] void h5_fail(const std::string& what, const char* file, int line) {
  throw_at("HDF5 call " + what + " failed: " + h5_last_error(), file, line);
}

RowSelection select_rows(hid_t dataset, int64_t begin, int64_t n) {
  RowSelection s;
  s.file = H5Handle(H5_CHECK(H5Dget_space(dataset)));
  const int rank = H5_CHECK(H5Sget_simple_extent_ndims(s.file.get()));
  std::vector<hsize_t> count(static_cast<size_t>(rank)), start(static_cast<size_t>(rank), 0);
  H5_CHECK(H5Sget_simple_extent_dims(s.file.get(), count.data(), nullptr));
  start[0] = static_cast<hsize_t>(begin);
  count[0] = static_cast<hsize_t>(n);
  H5_CHECK(H5Sselect_hyperslab(s.file.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr));
  s.memory = H5Handle(H5_CHECK(H5Screate_simple(rank, count.data(), nullptr)));
  return s;
}

bool h5_has_attr(hid_t obj, const char* name) { return H5Aexists(obj, name) > 0; }

namespace {

void write_attr(hid_t obj, const char* name, hid_t type, const void* data, hsize_t n) {
  if (h5_has_attr(obj, name)) H5_CHECK(H5Adelete(obj, name));
  H5Handle space(H5_CHECK(H5Screate_simple(1, &n, nullptr)));
  H5Handle attr(H5_CHECK(H5Acreate2(obj, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT)));
  H5_CHECK(H5Awrite(attr.get(), type, data));
}

// "FILE: missing attribute 'NAME'": the file the object is in, so an error names it whoever
// reads (inspect of an HDF5 file lockstep did not write said only "missing attribute 'name'").
std::string missing_attr(hid_t obj, const char* name) {
  std::string file(4096, '\0');
  const ssize_t n = H5Fget_name(obj, file.data(), file.size());
  file.resize(n > 0 ? std::min(static_cast<size_t>(n), file.size() - 1) : 0);
  return (file.empty() ? std::string() : file + ": ") + "missing attribute '" + name +
         "' (not a file lockstep wrote, or one of another version?)";
}

template <typename T>
std::vector<T> read_attr(hid_t obj, const char* name, hid_t mem_type) {
  LOCKSTEP_REQUIRE(h5_has_attr(obj, name), missing_attr(obj, name));
  H5Handle attr(H5_CHECK(H5Aopen(obj, name, H5P_DEFAULT)));
  H5Handle space(H5_CHECK(H5Aget_space(attr.get())));
  const hssize_t n = H5_CHECK(H5Sget_simple_extent_npoints(space.get()));
  std::vector<T> out(static_cast<size_t>(n));
  if (n > 0) H5_CHECK(H5Aread(attr.get(), mem_type, out.data()));
  return out;
}

}  // namespace

void h5_write_attr_i64(hid_t obj, const char* name, const std::vector<int64_t>& v) {
  write_attr(obj, name, H5T_NATIVE_INT64, v.data(), v.size());
}

void h5_write_attr_f64(hid_t obj, const char* name, const std::vector<double>& v) {
  write_attr(obj, name, H5T_NATIVE_DOUBLE, v.data(), v.size());
}

void h5_write_attr_str(hid_t obj, const char* name, const std::string& s) {
  if (h5_has_attr(obj, name)) H5_CHECK(H5Adelete(obj, name));
  H5Handle type(H5_CHECK(H5Tcopy(H5T_C_S1)));
  H5_CHECK(H5Tset_size(type.get(), s.empty() ? 1 : s.size()));
  H5Handle space(H5_CHECK(H5Screate(H5S_SCALAR)));
  H5Handle attr(
      H5_CHECK(H5Acreate2(obj, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT)));
  const std::string data = s.empty() ? std::string(1, '\0') : s;
  H5_CHECK(H5Awrite(attr.get(), type.get(), data.data()));
}

std::vector<int64_t> h5_read_attr_i64(hid_t obj, const char* name) {
  return read_attr<int64_t>(obj, name, H5T_NATIVE_INT64);
}

std::vector<double> h5_read_attr_f64(hid_t obj, const char* name) {
  return read_attr<double>(obj, name, H5T_NATIVE_DOUBLE);
}

std::string h5_read_attr_str(hid_t obj, const char* name) {
  LOCKSTEP_REQUIRE(h5_has_attr(obj, name), missing_attr(obj, name));
  H5Handle attr(H5_CHECK(H5Aopen(obj, name, H5P_DEFAULT)));
  H5Handle type(H5_CHECK(H5Aget_type(attr.get())));
  LOCKSTEP_REQUIRE(H5Tget_class(type.get()) == H5T_STRING && !H5Tis_variable_str(type.get()),
                   std::string("attribute '") + name + "' is not a fixed-length string");
  const size_t size = H5Tget_size(type.get());
  std::string out(size, '\0');
  H5_CHECK(H5Aread(attr.get(), type.get(), out.data()));
  while (!out.empty() && out.back() == '\0') out.pop_back();
  return out;
}

}  // namespace lockstep::io
