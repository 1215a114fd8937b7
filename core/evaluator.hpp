// evaluator: distributed evaluation. Each rank evaluates every sample it holds (nothing
// dropped), then one all-reduce sums (loss, correct, count): the result equals a 1-rank
// evaluation of the same data. Collective.
#pragma once

#include <cstdint>

#include "core/batch.hpp"
#include "core/model.hpp"
#include "io/rank_reader.hpp"

namespace lockstep {

class MpiRuntime;

struct EvalResult {
  double loss = 0.0;
  double accuracy = 0.0;
  int64_t count = 0;
};

// Reads DATA in natural order through a prefetching loader (PREFETCH batches ahead).
EvalResult evaluate(Net& model, const io::RankReader& data, const BatchMaker& maker, int64_t batch, int prefetch,
                    const MpiRuntime& mpi);

}  // namespace lockstep
