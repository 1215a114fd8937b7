// evaluator: see evaluator.hpp.
#include "core/eval/evaluator.hpp"

#include <torch/torch.h>

#include <cmath>

#include "core/dist/mpi_runtime.hpp"
#include "core/eval/mirror.hpp"
#include "core/eval/sequence_metrics.hpp"
#include "core/optim/loss.hpp"
#include "io/loader/epoch_loader.hpp"

namespace lockstep {
namespace {

// Collective. CTC loss and error counts over every sample this rank holds.
EvalResult evaluate_sequences(Net& model, const io::RankReader& data, const BatchMaker& maker, int64_t batch,
                              int prefetch, const MpiRuntime& mpi) {
  const io::DatasetSpec& spec = data.spec();
  const int64_t blank = static_cast<int64_t>(spec.tokens.size());
  int64_t space = -1;
  for (size_t i = 0; i < spec.tokens.size(); ++i)
    if (spec.tokens[i] == " ") space = static_cast<int64_t>(i);
  const auto loader = io::one_pass(data, batch, prefetch);
  ErrorCounts errors;
  double loss_sum = 0.0, count = 0.0, unaligned = 0.0;
  const int64_t w = spec.record_width();
  while (const io::Batch* b = loader->next()) {
    const SequenceTargets t = maker.targets(b->labels.data(), b->size);
    torch::Tensor out_lengths;
    const torch::Tensor logits =
        model.forward_sequence(maker.inputs(b->samples, b->size, b->labels.data()), t.lengths, &out_lengths);
    // The loss over the samples an alignment exists for: the others' 0 (CTC's zero_infinity)
    // made a set of them score a perfect val_loss.
    const torch::Tensor bad = unalignable(out_lengths, t.needed);
    const torch::Tensor each = ctc_loss_each(logits, out_lengths, t.targets, t.target_lengths, blank).to(torch::kCPU);
    loss_sum += each.masked_fill(bad, 0.0).sum().item<double>();
    unaligned += static_cast<double>(bad.sum().item<int64_t>());
    count += static_cast<double>(b->size);
    const auto hyps = greedy_decode(logits, out_lengths, blank);
    for (int64_t i = 0; i < b->size; ++i) {
      const int64_t* r = b->labels.data() + i * w;
      const int64_t* tok = io::record_targets(spec, r);
      errors.add(hyps[static_cast<size_t>(i)], TokenSeq(tok, tok + io::target_length(spec, r)), space);
    }
  }
  double sums[7] = {errors.char_edits, errors.chars, errors.word_edits, errors.words, loss_sum, count, unaligned};
  mpi.allreduce_sum(sums, 7);
  EvalResult r;
  r.sequence = true;
  r.count = static_cast<int64_t>(sums[5]);
  ErrorCounts all;
  all.char_edits = sums[0];
  all.chars = sums[1];
  all.word_edits = sums[2];
  all.words = sums[3];
  r.cer = all.cer();
  r.wer = all.wer();
  r.unaligned = static_cast<int64_t>(sums[6]);
  if (r.count > 0) r.loss = sums[5] > sums[6] ? sums[4] / (sums[5] - sums[6]) : std::nan("");
  return r;
}

}  // namespace

EvalResult evaluate(Net& model, const io::RankReader& data, const BatchMaker& maker, int64_t batch, int prefetch,
                    int64_t classes, const MpiRuntime& mpi, bool hflip) {
  const bool was_training = model.is_training();
  model.eval();
  torch::NoGradGuard no_grad;
  if (data.spec().sequence_targets()) {
    EvalResult r = evaluate_sequences(model, data, maker, batch, prefetch, mpi);
    if (was_training) model.train();
    return r;
  }
  const auto loader = io::one_pass(data, batch, prefetch);
  // Sums stay on the device until the end: no host sync per batch.
  torch::Tensor confusion, loss_sum;
  while (const io::Batch* b = loader->next()) {
    const torch::Tensor y = maker.labels(b->labels.data(), b->size);
    const torch::Tensor x = maker.inputs(b->samples, b->size, b->labels.data());
    const torch::Tensor logits = eval_logits(model, x, maker.ragged_lengths(b->labels.data(), b->size), hflip);
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

double metric_value(const EvalResult& ev, BestMetric metric) {
  switch (metric) {
    case BestMetric::kValAcc: return ev.accuracy;
    case BestMetric::kValLoss: return ev.loss;
    case BestMetric::kValCer: return ev.cer;
    case BestMetric::kValWer: return ev.wer;
    default: return ev.macro_f1;
  }
}


}  // namespace lockstep
