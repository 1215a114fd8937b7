// evaluator: distributed evaluation. Each rank evaluates every sample it holds (nothing
// dropped) and fills a confusion matrix; one all-reduce sums (matrix, loss sum): the
// result equals a 1-rank evaluation of the same data. Collective.
//
// The loss is plain cross-entropy (no class weights or smoothing), so runs with different
// training losses stay comparable. Sequence targets (CTC): the loss is CTC's, and greedy
// decoding gives CER and WER from all-reduced sums of edit distances and reference lengths.
#pragma once

#include <cstdint>
#include <vector>

#include "core/config/enums.hpp"
#include "core/data/batch_maker.hpp"
#include "core/eval/class_metrics.hpp"
#include "core/model/registry.hpp"
#include "io/loader/rank_reader.hpp"

namespace lockstep {

class MpiRuntime;

struct EvalResult {
  double loss = 0.0;
  double accuracy = 0.0;
  double macro_f1 = 0.0;
  int64_t count = 0;
  std::vector<int64_t> confusion;  // classes x classes, rows true class
  ClassMetrics metrics;
  bool sequence = false;  // CTC: cer/wer are set, accuracy/macro_f1/confusion are not
  // CTC: samples no alignment exists for (loss.hpp's unalignable): scored in cer/wer, not in
  // loss, which is NaN when none could be aligned.
  int64_t unaligned = 0;
  double cer = 0.0, wer = 0.0;
};

// Reads DATA in natural order through a prefetching loader (PREFETCH batches ahead). HFLIP:
// each image's class probabilities averaged with its mirror's (core/eval/mirror.hpp).
EvalResult evaluate(Net& model, const io::RankReader& data, const BatchMaker& maker, int64_t batch, int prefetch,
                    int64_t classes, const MpiRuntime& mpi, bool hflip);

// The value of METRIC (val_acc, val_f1, val_loss, val_cer, val_wer) in EV, as it is
// (lower_is_better() says which way is better); the one mapping best.ckpt and the stop
// rule both use.
double metric_value(const EvalResult& ev, BestMetric metric);

}  // namespace lockstep
