// npy_format: NumPy's .npy array format (numpy.lib.format, versions 1.0, 2.0 and 3.0) —
// the header read and checked, and elements converted to what lockstep stores. Written
// by hand: the format is a 10-12 byte preamble and a Python dict literal of three keys,
// documented in numpy.lib.format; no C/C++ library for it is packaged in Debian.
//
// 1. Preamble: "\x93NUMPY", major and minor version, the header length (2 bytes little
//    endian in 1.0, 4 bytes in 2.0/3.0).
// 2. Header: {'descr': '<f4', 'fortran_order': False, 'shape': (N, ...), } — descr a
//    byte order (<, >, |, =) + kind + item size; a list descr (structured records) is
//    refused, as are object arrays (pickled Python objects, never loaded), strings,
//    complex, dates and 16-byte floats, each by name.
// 3. Data: count() elements of item_bytes, C order (last axis fastest) or Fortran order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "io/dataset/shard_format.hpp"

namespace lockstep::io {

struct NpyHeader {
  char kind = 0;             // 'b' bool, 'i' signed integer, 'u' unsigned integer, 'f' float
  int item_bytes = 0;        // 1, 2, 4 or 8
  bool big_endian = false;
  bool fortran_order = false;
  std::vector<int64_t> shape;
  int64_t data_offset = 0;   // bytes from the file's (or zip member's) start to the first element
  std::string descr;         // as written, for messages

  int64_t count() const;     // elements (1 for a 0-d array)
  int64_t data_bytes() const { return count() * item_bytes; }
};

// Bytes of preamble + header, from the file's first 12 bytes (fewer: refused as too short).
// WHAT names the file or zip member in every error.
int64_t npy_header_bytes(const unsigned char* first, size_t n, const std::string& what);

// Parses preamble + header (npy_header_bytes(...) bytes at BYTES). Throws lockstep::Error
// naming WHAT and what is wrong; shapes are checked against 2^40 elements.
NpyHeader parse_npy_header(const unsigned char* bytes, size_t n, const std::string& what);

// The dtype samples of this array are stored as: bool and uint8 stay uint8, int8 and int16
// become int16, float16 stays float16, every other integer and float becomes float32.
DType npy_store_dtype(const NpyHeader& h);

// Converts N elements at IN (the array's own type and byte order) to TO at OUT.
void npy_convert(const NpyHeader& h, const unsigned char* in, int64_t n, DType to, void* out);

// Converts N integer elements at IN to int64 (labels); a float or bool array is refused.
void npy_to_int64(const NpyHeader& h, const unsigned char* in, int64_t n, int64_t* out, const std::string& what);

// Reorders a Fortran-order array (every element, as bytes) into C order in place of DATA.
void npy_fortran_to_c(const NpyHeader& h, std::vector<unsigned char>* data);

}  // namespace lockstep::io
