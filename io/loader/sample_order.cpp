// sample_order: see sample_order.hpp.
#include "io/loader/sample_order.hpp"

#include <cstddef>
#include <numeric>
#include <utility>

namespace lockstep::io {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t mix_seed(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  uint64_t s = seed;
  uint64_t h = splitmix64(s);
  for (const uint64_t v : {a, b, c}) {
    s = h ^ v;
    h = splitmix64(s);
  }
  return h;
}

std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch, int rank) {
  std::vector<int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  uint64_t state = mix_seed(seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(rank), 0x5A3D);
  for (int64_t i = n - 1; i > 0; --i) {
    // Lemire's multiply-shift: unbiased enough for shuffling (bias < 2^-32 for n < 2^32).
    const uint64_t r = splitmix64(state) >> 32;
    const int64_t j = static_cast<int64_t>((r * static_cast<uint64_t>(i + 1)) >> 32);
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

}  // namespace lockstep::io
