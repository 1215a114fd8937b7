// share_check: at start-up, every rank judges the class mix of the samples it will train
// on in the first epoch (io/loader/share_balance.hpp) and rank 0 warns, one line per
// biased rank, with the remedy. Collective: every rank calls it, in the same place.
#pragma once

#include <cstdint>
#include <string>

#include "io/dataset/shard_format.hpp"
#include "io/loader/rank_reader.hpp"

namespace lockstep {

class MpiRuntime;

void check_rank_shares(const io::RankReader& train, const io::Manifest& m, const std::string& split, uint64_t seed,
                      int64_t epoch, const MpiRuntime& mpi);

}  // namespace lockstep
