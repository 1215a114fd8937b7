// sample_order: the per-epoch order in which a rank visits its samples.
//
// A pure function of (n, seed, epoch, rank): the same on every machine and standard
// library (own generator and Fisher-Yates, not std::shuffle, whose algorithm is
// unspecified). Resuming at step k of an epoch replays the same order and skips k batches.
#pragma once

#include <cstdint>
#include <vector>

namespace lockstep::io {

// splitmix64: a tiny, well-mixed 64-bit generator; also used to derive seeds.
uint64_t splitmix64(uint64_t& state);
uint64_t mix_seed(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0);

std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch, int rank);

}  // namespace lockstep::io
