// fletcher32: see fletcher32.hpp.
#include "io/util/fletcher32.hpp"

#include <algorithm>

namespace lockstep::io {

uint32_t fletcher32(const void* data, size_t len) {
  const auto* d = static_cast<const uint8_t*>(data);
  size_t words = len / 2;
  uint32_t sum1 = 0, sum2 = 0;
  while (words) {
    // HDF5 adds up to 360 words before folding; within a block, in uint32 arithmetic as
    // HDF5's, sum2 grows by tlen * sum1 plus each word weighted by the sums it enters.
    const uint32_t tlen = static_cast<uint32_t>(std::min<size_t>(words, 360));
    uint32_t s1 = 0, s2 = 0;
    for (uint32_t i = 0; i < tlen; ++i) {
      const uint32_t w = (static_cast<uint32_t>(d[2 * i]) << 8) | d[2 * i + 1];
      s1 += w;
      s2 += (tlen - i) * w;
    }
    sum2 += tlen * sum1 + s2;
    sum1 += s1;
    d += 2 * static_cast<size_t>(tlen);
    words -= tlen;
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  if (len % 2) {
    sum1 += static_cast<uint32_t>(*d) << 8;
    sum2 += sum1;
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  sum1 = (sum1 & 0xffff) + (sum1 >> 16);
  sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  return (sum2 << 16) | sum1;
}

// The stored checksum (little-endian, HDF5's UINT32ENCODE) matches SUM, or SUM with the
// bytes of each half swapped (what HDF5 before 1.6.3 wrote on little-endian machines).
bool fletcher32_matches(const unsigned char* stored, uint32_t sum) {
  const uint32_t s = static_cast<uint32_t>(stored[0]) | (static_cast<uint32_t>(stored[1]) << 8) |
                     (static_cast<uint32_t>(stored[2]) << 16) | (static_cast<uint32_t>(stored[3]) << 24);
  const uint32_t swapped = ((sum & 0x00ff00ffu) << 8) | ((sum & 0xff00ff00u) >> 8);
  return s == sum || s == swapped;
}

}  // namespace lockstep::io
