// fletcher32: HDF5's Fletcher-32 checksum (H5_checksum_fletcher32, the sum its Fletcher-32
// filter appends to each chunk): big-endian 16-bit words, both sums folded to 16 bits after
// every 360 words, an odd last byte as the high byte of a word. Computed a block of 360
// words at a time (the second sum as a weighted sum of the block's words), which the
// compiler vectorises: ~4 GB/s on one core of the CI VM against HDF5's word-at-a-time loop.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lockstep::io {

uint32_t fletcher32(const void* data, size_t len);

// Whether the 4 bytes STORED after a chunk (little-endian, as HDF5 writes them) match SUM, or
// SUM with the bytes of each half swapped (what HDF5 before 1.6.3 wrote on little-endian hosts).
bool fletcher32_matches(const unsigned char* stored, uint32_t sum);

}  // namespace lockstep::io
