// evaluator: see evaluator.hpp.
#include "core/evaluator.hpp"

#include <torch/torch.h>

#include <numeric>

#include "core/mpi_runtime.hpp"

namespace lockstep {

EvalResult evaluate(Net& model, const io::SampleStore& data, const BatchMaker& maker, int64_t batch,
                    const MpiRuntime& mpi) {
  const bool was_training = model.is_training();
  model.eval();
  torch::NoGradGuard no_grad;
  double sums[3] = {0.0, 0.0, 0.0};  // loss * n, correct, n
  std::vector<unsigned char> raw(static_cast<size_t>(batch) * data.spec().sample_bytes());
  std::vector<int64_t> labels(static_cast<size_t>(batch)), idx(static_cast<size_t>(batch));
  for (int64_t i = 0; i < data.size(); i += batch) {
    const int64_t n = std::min(batch, data.size() - i);
    std::iota(idx.begin(), idx.begin() + n, i);
    data.gather(idx.data(), n, raw.data(), labels.data());
    const torch::Tensor y = maker.labels(labels.data(), n);
    const torch::Tensor logits = model.forward(maker.inputs(raw.data(), n));
    sums[0] += torch::nn::functional::cross_entropy(
                   logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                   .item<double>();
    sums[1] += logits.argmax(1).eq(y).sum().item<double>();
    sums[2] += static_cast<double>(n);
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
