// chunk_reader: a shard's /samples read straight from its chunks in the file, outside the
// HDF5 library — so that several threads read one split at once (HDF5's calls are
// serialised by h5_mutex(), and one thread read ~1.2 GB/s: a GPU node wants several).
//
// open() applies where /samples is chunked along the sample axis only (each chunk holds
// whole samples), stored in the byte order and type it is read in (no conversion),
// unfiltered or with Fletcher-32 alone (every shard lockstep writes without --compression),
// every chunk allocated at the size that layout implies, in a file without a user block
// (HDF5 before 1.14.4 gives chunk addresses without it) opened by HDF5's POSIX driver, and
// HDF5 1.10.5 or later; elsewhere it returns nullptr and ShardFile reads through HDF5 as
// before. It lists the chunks' addresses once (H5Dget_chunk_info_by_coord; H5Dchunk_iter,
// one pass, arrives in 1.14), in ShardFile's constructor with its other HDF5 calls. Its
// HDF5 queries are probes: one that fails means "read through HDF5", not an error.
// read() — any thread, no HDF5 call, no lock — reads each chunk a sample range touches
// with preadv() on HDF5's own descriptor of the file (the ShardFile keeps it open): a chunk
// wanted whole straight into the caller's buffer, its checksum beside it; a part of a
// checksummed chunk through a buffer (the sum covers the whole chunk); a part of an
// unfiltered chunk, only its rows. The Fletcher-32 is verified as HDF5 verifies it
// (io/util/fletcher32.hpp). A chunk that fails it, an I/O error and a short read are each
// an error naming the chunk.
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lockstep::io {

class ChunkReader {
 public:
  // DATASET of FILE: rows of ROW_BYTES bytes in MEMORY_TYPE. nullptr where it does not apply.
  static std::unique_ptr<ChunkReader> open(hid_t file, hid_t dataset, hid_t memory_type, size_t row_bytes);
  ChunkReader(const ChunkReader&) = delete;
  ChunkReader& operator=(const ChunkReader&) = delete;

  // Rows [BEGIN, BEGIN+N) into OUT (N * row_bytes). "" on success, else what failed.
  std::string read(int64_t begin, int64_t n, void* out) const;

  int64_t chunk_rows() const { return chunk_rows_; }

 private:
  ChunkReader() = default;

  int fd_ = -1;  // HDF5's descriptor of the file
  size_t row_bytes_ = 0;
  int64_t rows_ = 0, chunk_rows_ = 0;
  uint64_t chunk_bytes_ = 0;  // as stored, the checksum included
  bool checksum_ = false;
  std::vector<uint64_t> addr_;  // each chunk's place in the file
};

}  // namespace lockstep::io
