// Gradient averaging and distributed evaluation at 1 and 2 ranks.
//
// The reference for "averaged gradients" is one process that sees the union of every
// rank's batch: mean-of-means over equal halves equals the mean over the union. The
// model runs in eval mode (BatchNorm on running statistics, no dropout) so both sides
// compute the same function; tolerance 1e-5 relative + 1e-7 absolute (float32 summation
// order differs between one big batch and two halves).
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include "core/batch.hpp"
#include "core/communicator.hpp"
#include "core/evaluator.hpp"
#include "core/grad_reducer.hpp"
#include "core/model.hpp"
#include "core/mpi_runtime.hpp"
#include "io/file_util.hpp"
#include "io/rank_reader.hpp"
#include "io/shard_writer.hpp"
#include "mpi_test_env.hpp"

using namespace lockstep;
using lockstep::testing::mpi;

namespace {

io::DatasetSpec spec28() {
  io::DatasetSpec s;
  s.name = "t";
  s.sample_shape = {1, 28, 28};
  s.num_classes = 10;
  s.mean = {100.0};
  s.std = {50.0};
  return s;
}

std::shared_ptr<Net> seeded_model(uint64_t seed) {
  torch::manual_seed(seed);
  auto m = make_model("cnn", spec28(), 0.0);
  m->eval();
  return m;
}

// Gradients after one backward over rows [begin, end) of (X, Y), optionally reduced.
std::vector<torch::Tensor> grads_of(Net& model, const torch::Tensor& x, const torch::Tensor& y, int64_t begin,
                                    int64_t end, GradReducer* reducer) {
  model.zero_grad();
  torch::nn::functional::cross_entropy(model.forward(x.slice(0, begin, end)), y.slice(0, begin, end)).backward();
  if (reducer) reducer->average_gradients();
  std::vector<torch::Tensor> g;
  for (const auto& p : model.parameters()) g.push_back(p.grad().clone());
  return g;
}

}  // namespace

TEST(GradReducer, AveragedGradientsEqualTheUnionBatch) {
  const int64_t per_rank = 8, world = mpi().size(), rank = mpi().rank();
  torch::manual_seed(99);  // the same global batch on every rank
  const auto x = torch::randn({per_rank * world, 1, 28, 28});
  const auto y = torch::randint(0, 10, {per_rank * world}, torch::kLong);

  MpiCommunicator comm(mpi());
  auto model = seeded_model(7);
  GradReducer reducer(model->parameters(), comm, 25.0);
  const auto reduced = grads_of(*model, x, y, rank * per_rank, (rank + 1) * per_rank, &reducer);
  auto reference_model = seeded_model(7);
  const auto reference = grads_of(*reference_model, x, y, 0, per_rank * world, nullptr);
  ASSERT_EQ(reduced.size(), reference.size());
  for (size_t i = 0; i < reduced.size(); ++i)
    EXPECT_TRUE(torch::allclose(reduced[i], reference[i], 1e-5, 1e-7))
        << "parameter " << i << " max diff " << (reduced[i] - reference[i]).abs().max().item<double>();
}

TEST(GradReducer, BucketingDoesNotChangeTheResult) {
  torch::manual_seed(5 + mpi().rank());  // different data per rank
  const auto x = torch::randn({6, 1, 28, 28});
  const auto y = torch::randint(0, 10, {6}, torch::kLong);
  MpiCommunicator comm(mpi());
  std::vector<std::vector<torch::Tensor>> results;
  for (const double mb : {0.0, 0.05, 25.0}) {
    auto model = seeded_model(3);
    GradReducer reducer(model->parameters(), comm, mb);
    if (mb == 0.0) EXPECT_EQ(reducer.buckets().size(), model->parameters().size());
    results.push_back(grads_of(*model, x, y, 0, 6, &reducer));
  }
  for (size_t r = 1; r < results.size(); ++r)
    for (size_t i = 0; i < results[0].size(); ++i) EXPECT_TRUE(torch::equal(results[0][i], results[r][i]));
}

TEST(GradReducer, BroadcastMakesEveryRankEqualToRankZero) {
  MpiCommunicator comm(mpi());
  auto model = seeded_model(100 + mpi().rank());  // deliberately different per rank
  std::vector<at::Tensor> all = model->parameters();
  for (const auto& b : model->buffers()) all.push_back(b);
  broadcast_tensors(all, comm);
  auto rank0 = seeded_model(100);
  const auto mine = model->parameters(), want = rank0->parameters();
  for (size_t i = 0; i < mine.size(); ++i) EXPECT_TRUE(torch::equal(mine[i], want[i])) << i;
}

TEST(Evaluator, DistributedEqualsSingleProcess) {
  // Rank 0 writes a dataset of 103 samples (odd, so ranks hold different counts).
  const std::string dir = mpi().broadcast_string(
      mpi().rank() == 0 ? ::testing::TempDir() + "/lockstep-eval-" + std::to_string(::getpid()) : "", 0);
  io::Manifest m;
  m.spec = spec28();
  const int64_t n = 103;
  std::vector<unsigned char> raw(static_cast<size_t>(n) * m.spec.sample_bytes());
  std::vector<int64_t> labels(n);
  for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<unsigned char>((i * 2654435761u) >> 24);
  for (int64_t i = 0; i < n; ++i) labels[i] = (i * 7) % 10;
  if (mpi().rank() == 0) {
    io::make_dirs(dir);
    m.splits.emplace_back("test", io::write_split(dir, "test", m.spec, raw.data(), labels.data(), n, 3, {}));
    io::write_manifest(dir, m);
  }
  mpi().barrier();
  m = io::read_manifest(dir);
  auto model = seeded_model(11);
  const BatchMaker maker(m.spec, torch::kCPU);
  EvalResult dist;
  for (const char* mode : {"memory", "stream"}) {
    io::ReaderOptions ro;
    ro.mode = mode;
    ro.block_samples = 5;
    const io::RankReader reader(dir, m, "test", mpi().rank(), mpi().size(), ro);
    const EvalResult e = evaluate(*model, reader, maker, 16, 2, mpi());
    if (dist.count > 0) EXPECT_DOUBLE_EQ(e.loss, dist.loss) << mode;
    dist = e;
  }

  // Reference: this process alone over all 103 samples, straight from the arrays.
  torch::NoGradGuard ng;
  const auto logits = model->forward(maker.inputs(raw.data(), n));
  const auto y = maker.labels(labels.data(), n);
  const double loss = torch::nn::functional::cross_entropy(logits, y).item<double>();
  const double acc = logits.argmax(1).eq(y).to(torch::kDouble).mean().item<double>();
  EXPECT_EQ(dist.count, n);
  EXPECT_NEAR(dist.loss, loss, 1e-5);
  EXPECT_DOUBLE_EQ(dist.accuracy, acc);
  mpi().barrier();
}
