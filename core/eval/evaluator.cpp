// evaluator: see evaluator.hpp.
#include "core/eval/evaluator.hpp"

#include <torch/torch.h>

#include "core/dist/mpi_runtime.hpp"
#include "io/loader/epoch_loader.hpp"

namespace lockstep {

EvalResult evaluate(Net& model, const io::RankReader& data, const BatchMaker& maker, int64_t batch, int prefetch,
                    int64_t classes, const MpiRuntime& mpi) {
  const bool was_training = model.is_training();
  model.eval();
  torch::NoGradGuard no_grad;
  const int64_t steps = (data.size() + batch - 1) / batch;
  io::EpochLoader loader(data, data.order(/*shuffle=*/false, 0, 0), batch, steps, 0, prefetch, /*partial_last=*/true);
  // Sums stay on the device until the end: no host sync per batch.
  torch::Tensor confusion, loss_sum;
  while (const io::Batch* b = loader.next()) {
    const torch::Tensor y = maker.labels(b->labels.data(), b->size);
    const torch::Tensor logits = model.forward(maker.inputs(b->samples.data(), b->size)).to(torch::kFloat);
    const torch::Tensor loss = torch::nn::functional::cross_entropy(
        logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
    const torch::Tensor cells = torch::bincount(y * classes + logits.argmax(1), {}, classes * classes);
    confusion = confusion.defined() ? confusion + cells : cells;
    loss_sum = loss_sum.defined() ? loss_sum + loss.to(torch::kDouble) : loss.to(torch::kDouble);
  }
  const auto k2 = static_cast<size_t>(classes * classes);
  std::vector<double> sums(k2 + 1, 0.0);  // confusion cells, then the loss sum
  if (confusion.defined()) {
    const torch::Tensor host = confusion.to(torch::kCPU, torch::kDouble).contiguous();
    std::copy(host.data_ptr<double>(), host.data_ptr<double>() + k2, sums.begin());
    sums[k2] = loss_sum.item<double>();
  }
  mpi.allreduce_sum(sums.data(), static_cast<int>(sums.size()));
  if (was_training) model.train();
  EvalResult r;
  r.confusion.resize(k2);
  for (size_t i = 0; i < k2; ++i) r.confusion[i] = static_cast<int64_t>(sums[i]);
  r.metrics = class_metrics(r.confusion, classes);
  r.count = r.metrics.count;
  r.accuracy = r.metrics.accuracy;
  r.macro_f1 = r.metrics.macro_f1;
  if (r.count > 0) r.loss = sums[k2] / static_cast<double>(r.count);
  return r;
}

}  // namespace lockstep
