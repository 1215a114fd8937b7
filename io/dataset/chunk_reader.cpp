// chunk_reader: see chunk_reader.hpp.
#include "io/dataset/chunk_reader.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "io/util/fletcher32.hpp"
#include "io/util/h5.hpp"

namespace lockstep::io {

namespace {

constexpr size_t kChecksumBytes = 4;

// Reads PARTS (N <= 2 of them, LEN bytes together) from FD at OFFSET, whole. "" or what failed.
std::string read_whole(int fd, const iovec* parts, int n, size_t len, uint64_t offset) {
  LOCKSTEP_REQUIRE(n >= 1 && n <= 2, "read_whole takes one or two parts");
  size_t got = 0;
  while (got < len) {
    iovec left[2];
    int k = 0;
    size_t skip = got;  // what earlier calls filled
    for (int i = 0; i < n; ++i) {
      if (skip >= parts[i].iov_len) {
        skip -= parts[i].iov_len;
        continue;
      }
      left[k++] = {static_cast<unsigned char*>(parts[i].iov_base) + skip, parts[i].iov_len - skip};
      skip = 0;
    }
    const ssize_t r = ::preadv(fd, left, k, static_cast<off_t>(offset + got));
    if (r < 0) {
      const int e = errno;
      if (e == EINTR) continue;
      return "I/O error: " + std::generic_category().message(e);
    }
    if (r == 0) return "the file ends inside it (truncated)";
    got += static_cast<size_t>(r);
  }
  return "";
}

}  // namespace

std::unique_ptr<ChunkReader> ChunkReader::open(hid_t file, hid_t dataset, hid_t memory_type, size_t row_bytes) {
#if H5_VERSION_GE(1, 10, 5)
  if (row_bytes == 0) return nullptr;
  H5Handle fcpl(H5Fget_create_plist(file));
  hsize_t user_block = 0;
  if (!fcpl.valid() || H5Pget_userblock(fcpl.get(), &user_block) < 0 || user_block != 0) return nullptr;
  H5Handle dcpl(H5Dget_create_plist(dataset));
  if (!dcpl.valid() || H5Pget_layout(dcpl.get()) != H5D_CHUNKED) return nullptr;
  H5Handle space(H5Dget_space(dataset));
  const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (rank < 1) return nullptr;
  std::vector<hsize_t> dims(static_cast<size_t>(rank)), chunk(static_cast<size_t>(rank));
  if (H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0 ||
      H5Pget_chunk(dcpl.get(), rank, chunk.data()) != rank || chunk[0] == 0)
    return nullptr;
  for (int i = 1; i < rank; ++i)
    if (chunk[static_cast<size_t>(i)] != dims[static_cast<size_t>(i)]) return nullptr;  // chunks of whole samples
  H5Handle type(H5Dget_type(dataset));
  if (!type.valid() || H5Tequal(type.get(), memory_type) <= 0) return nullptr;  // HDF5 would convert
  auto r = std::unique_ptr<ChunkReader>(new ChunkReader());
  const int filters = H5Pget_nfilters(dcpl.get());
  if (filters == 1) {
    unsigned flags = 0;
    size_t nelem = 0;
    if (H5Pget_filter2(dcpl.get(), 0, &flags, &nelem, nullptr, 0, nullptr, nullptr) != H5Z_FILTER_FLETCHER32) return nullptr;
    r->checksum_ = true;
  } else if (filters != 0) {
    return nullptr;
  }
  H5Handle fapl(H5Fget_access_plist(file));
  void* handle = nullptr;
  if (!fapl.valid() || H5Pget_driver(fapl.get()) != H5FD_SEC2 || H5Fget_vfd_handle(file, fapl.get(), &handle) < 0 ||
      !handle)
    return nullptr;
  r->fd_ = *static_cast<int*>(handle);
  r->row_bytes_ = row_bytes;
  r->rows_ = static_cast<int64_t>(dims[0]);
  r->chunk_rows_ = static_cast<int64_t>(chunk[0]);
  r->chunk_bytes_ = static_cast<uint64_t>(r->chunk_rows_) * row_bytes + (r->checksum_ ? kChecksumBytes : 0);
  const int64_t count = r->rows_ == 0 ? 0 : (r->rows_ - 1) / r->chunk_rows_ + 1;
  r->addr_.resize(static_cast<size_t>(count));
  std::vector<hsize_t> at(static_cast<size_t>(rank), 0);
  for (int64_t c = 0; c < count; ++c) {
    at[0] = static_cast<hsize_t>(c * r->chunk_rows_);
    unsigned mask = 0;
    haddr_t addr = HADDR_UNDEF;
    hsize_t size = 0;
    if (H5Dget_chunk_info_by_coord(dataset, at.data(), &mask, &addr, &size) < 0 || addr == HADDR_UNDEF ||
        mask != 0 || size != r->chunk_bytes_)
      return nullptr;  // unallocated, a filter skipped, or another size: HDF5 knows how to read it
    r->addr_[static_cast<size_t>(c)] = static_cast<uint64_t>(addr);
  }
  return r;
#else
  (void)file, (void)dataset, (void)memory_type, (void)row_bytes;
  return nullptr;  // no chunk queries before HDF5 1.10.5
#endif
}

std::string ChunkReader::read(int64_t begin, int64_t n, void* out) const {
  if (begin < 0 || n < 0 || begin + n > rows_)
    return "rows [" + std::to_string(begin) + ", " + std::to_string(begin + n) + ") are outside the " +
           std::to_string(rows_) + " stored";
  auto* dst = static_cast<unsigned char*>(out);
  std::vector<unsigned char> buf;
  const size_t data = chunk_bytes_ - (checksum_ ? kChecksumBytes : 0);
  for (int64_t row = begin; row < begin + n;) {
    const int64_t c = row / chunk_rows_;
    const uint64_t addr = addr_[static_cast<size_t>(c)];
    const int64_t first = c * chunk_rows_;
    const int64_t end = std::min(begin + n, first + chunk_rows_);
    const size_t bytes = static_cast<size_t>(end - row) * row_bytes_;
    const size_t skip = static_cast<size_t>(row - first) * row_bytes_;
    const auto failed = [&](const std::string& what) {
      return "chunk " + std::to_string(c) + " at byte " + std::to_string(addr) + ": " + what;
    };
    std::string why;
    bool sum_ok = true;
    if (!checksum_) {  // the rows alone
      const iovec part{dst, bytes};
      why = read_whole(fd_, &part, 1, bytes, addr + skip);
    } else if (bytes == data) {  // the whole chunk straight into OUT, its checksum beside it
      unsigned char sum[kChecksumBytes];
      const iovec parts[2] = {{dst, data}, {sum, kChecksumBytes}};
      why = read_whole(fd_, parts, 2, chunk_bytes_, addr);
      sum_ok = !why.empty() || fletcher32_matches(sum, fletcher32(dst, data));
    } else {  // a part: the whole chunk through BUF, for its checksum
      buf.resize(chunk_bytes_);
      const iovec part{buf.data(), buf.size()};
      why = read_whole(fd_, &part, 1, buf.size(), addr);
      sum_ok = !why.empty() || fletcher32_matches(buf.data() + data, fletcher32(buf.data(), data));
      if (why.empty() && sum_ok) std::memcpy(dst, buf.data() + skip, bytes);
    }
    if (!sum_ok)
      return failed("fails its checksum (Fletcher-32): the shard changed after `lockstep shard`; lockstep inspect DIR "
                    "--verify checks every shard");
    if (!why.empty()) return failed(why);
    dst += bytes;
    row = end;
  }
  return "";
}

}  // namespace lockstep::io
