// h5: RAII owner for HDF5 identifiers and the H5_CHECK helper.
//
// Every hid_t lockstep opens lives in an H5Handle, so an exception anywhere in the data
// layer still closes files (an HDF5 file left open keeps its lock and can't be renamed).
// HDF5's automatic error-stack printing is turned off once; failures become
// lockstep::Error with the HDF5 major/minor message and file:line instead.
#pragma once

#include <hdf5.h>

#include <mutex>
#include <string>
#include <vector>

#include "core/base/error.hpp"

namespace lockstep::io {

class H5Handle {
 public:
  H5Handle() = default;
  explicit H5Handle(hid_t id) : id_(id) {}
  ~H5Handle() { reset(); }
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  H5Handle(H5Handle&& o) noexcept : id_(o.id_) { o.id_ = H5I_INVALID_HID; }
  H5Handle& operator=(H5Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      o.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset() { (void)close(); }  // unchecked: destructors and error paths
  // Closes now; HDF5's status (negative: failed). A writer closes through H5_CHECK before it
  // commits a file: closing a dataset writes its cached chunks, and a full disk there left
  // zero-filled holes in a file that a later flush reported written (a hostile finding).
  herr_t close();

 private:
  hid_t id_ = H5I_INVALID_HID;
};

// HDF5 calls from the loader and read threads and the training thread take this lock (the
// chunk reader's reads of /samples call no HDF5 function: chunk_reader.hpp). Debian's
// libhdf5 is built thread-safe (H5_HAVE_THREADSAFE) and needs no lock; a site's HDF5
// module built without thread safety would corrupt its state under concurrent calls.
std::mutex& h5_mutex();

// Silences HDF5's own stderr dumps for the calling thread (idempotent); called by every
// io entry point that may run on a new thread.
void h5_quiet();
// The HDF5 library's version, "1.10.8".
std::string h5_version();
// HDF5's error stack in one line: the API call's message, the operating system's error
// and the file a low-level I/O error names, e.g. "can't write data: No space left on
// device (file /d/train-00000-of-00001.h5...)".
std::string h5_last_error();
[[noreturn]] void h5_fail(const std::string& what, const char* file, int line);

// Rows [BEGIN, BEGIN+N) of a dataset (first dimension = samples): the file dataspace with
// that hyperslab selected and a matching memory dataspace, for H5Dread/H5Dwrite.
struct RowSelection {
  H5Handle file, memory;
};
RowSelection select_rows(hid_t dataset, int64_t begin, int64_t n);

// Attribute helpers on an open object. Reading a missing attribute throws naming it.
bool h5_has_attr(hid_t obj, const char* name);
void h5_write_attr_i64(hid_t obj, const char* name, const std::vector<int64_t>& v);
void h5_write_attr_f64(hid_t obj, const char* name, const std::vector<double>& v);
void h5_write_attr_str(hid_t obj, const char* name, const std::string& s);
std::vector<int64_t> h5_read_attr_i64(hid_t obj, const char* name);
std::vector<double> h5_read_attr_f64(hid_t obj, const char* name);
std::string h5_read_attr_str(hid_t obj, const char* name);

}  // namespace lockstep::io

// Evaluates an HDF5 call returning hid_t or herr_t; a negative result throws with the
// call text, HDF5's own message and file:line. Yields the call's value.
#define H5_CHECK(call)                                                            \
  ([&]() {                                                                        \
    auto h5_rc_ = (call);                                                         \
    if (h5_rc_ < 0) ::lockstep::io::h5_fail(#call, __FILE__, __LINE__);           \
    return h5_rc_;                                                                \
  }())
