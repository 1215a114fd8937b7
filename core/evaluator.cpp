// evaluator: see evaluator.hpp.
#include "core/evaluator.hpp"

#include <torch/torch.h>


#include "core/mpi_runtime.hpp"
#include "io/epoch_loader.hpp"

namespace lockstep {

EvalResult evaluate(Net& model, const io::RankReader& data, const BatchMaker& maker, int64_t batch, int prefetch,
                    const MpiRuntime& mpi) {
  const bool was_training = model.is_training();
  model.eval();
  torch::NoGradGuard no_grad;
  double sums[3] = {0.0, 0.0, 0.0};  // loss * n, correct, n
  const int64_t steps = (data.size() + batch - 1) / batch;
  io::EpochLoader loader(data, data.order(/*shuffle=*/false, 0, 0), batch, steps, 0, prefetch, /*partial_last=*/true);
  while (const io::Batch* b = loader.next()) {
    const torch::Tensor y = maker.labels(b->labels.data(), b->size);
    const torch::Tensor logits = model.forward(maker.inputs(b->samples.data(), b->size));
    sums[0] += torch::nn::functional::cross_entropy(
                   logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                   .item<double>();
    sums[1] += logits.argmax(1).eq(y).sum().item<double>();
    sums[2] += static_cast<double>(b->size);
  }
  mpi.allreduce_sum(sums, 3);
  if (was_training) model.train();
  EvalResult r;
  r.count = static_cast<int64_t>(sums[2]);
  if (r.count > 0) {
    r.loss = sums[0] / sums[2];
    r.accuracy = sums[1] / sums[2];
  }
  return r;
}

}  // namespace lockstep
