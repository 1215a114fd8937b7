// Gradient averaging and distributed evaluation at 1 and 2 ranks.
//
// The reference for "averaged gradients" is one process that sees the union of every
// rank's batch: mean-of-means over equal halves equals the mean over the union. The
// model runs in eval mode (BatchNorm on running statistics, no dropout) so both sides
// compute the same function; tolerance 1e-5 relative + 1e-7 absolute (float32 summation
// order differs between one big batch and two halves).
#include <gtest/gtest.h>

#include <cmath>
#include <torch/torch.h>
#include <unistd.h>

#include "core/data/batch_maker.hpp"
#include "core/dist/communicator.hpp"
#include "core/dist/mpi_communicator.hpp"
#include "core/eval/evaluator.hpp"
#include "core/dist/grad_reducer.hpp"
#include "core/dist/half_sum.hpp"
#include "core/dist/tensor_sync.hpp"
#include "core/model/registry.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "io/util/file_util.hpp"
#include "io/loader/rank_reader.hpp"
#include "io/dataset/shard_writer.hpp"
#include "mpi_test_env.hpp"

using namespace lockstep;
using lockstep::testing::fresh_shared_dir;
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
  auto m = make_model(ModelOptions{"cnn", 0.0}, spec28());
  m->eval();
  return m;
}

// Gradients after backward over rows [begin, end) of (X, Y) in ACCUM equal micro-batches,
// reduced through REDUCER's hooks when given (prepare before backward, finish after).
std::vector<torch::Tensor> grads_of(Net& model, const torch::Tensor& x, const torch::Tensor& y, int64_t begin,
                                    int64_t end, GradReducer* reducer, int64_t accum = 1) {
  model.zero_grad();
  const int64_t micro = (end - begin) / accum;
  for (int64_t a = 0; a < accum; ++a) {
    const int64_t b = begin + a * micro;
    if (reducer) reducer->prepare(a == accum - 1);
    (torch::nn::functional::cross_entropy(model.forward(x.slice(0, b, b + micro)), y.slice(0, b, b + micro)) /
     static_cast<double>(accum))
        .backward();
  }
  if (reducer) reducer->finish();
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

TEST(GradReducer, BucketsLaunchDuringBackwardAndMatchTheNonOverlappedPath) {
  torch::manual_seed(21 + mpi().rank());
  const auto x = torch::randn({8, 1, 28, 28});
  const auto y = torch::randint(0, 10, {8}, torch::kLong);
  MpiCommunicator comm(mpi());
  auto hooked = seeded_model(4), plain = seeded_model(4);
  GradReducer overlap(hooked->parameters(), comm, 0.05, /*overlap=*/true);
  GradReducer after(plain->parameters(), comm, 0.05, /*overlap=*/false);
  ASSERT_GT(overlap.buckets().size(), 2u);
  const auto a = grads_of(*hooked, x, y, 0, 8, &overlap);
  // Every bucket whose parameters all got gradients launched from a hook, during backward.
  EXPECT_EQ(overlap.launched_in_backward(), static_cast<int>(overlap.buckets().size()));
  const auto b = grads_of(*plain, x, y, 0, 8, &after);
  EXPECT_EQ(after.launched_in_backward(), 0);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
}

TEST(GradReducer, AccumulationEqualsOneLargeBatch) {
  const int64_t per_rank = 8, world = mpi().size(), rank = mpi().rank();
  torch::manual_seed(77);
  const auto x = torch::randn({per_rank * world, 1, 28, 28});
  const auto y = torch::randint(0, 10, {per_rank * world}, torch::kLong);
  MpiCommunicator comm(mpi());
  auto one = seeded_model(9), four = seeded_model(9);
  GradReducer r1(one->parameters(), comm, 25.0), r4(four->parameters(), comm, 25.0);
  const auto g1 = grads_of(*one, x, y, rank * per_rank, (rank + 1) * per_rank, &r1, 1);
  const auto g4 = grads_of(*four, x, y, rank * per_rank, (rank + 1) * per_rank, &r4, 4);
  for (size_t i = 0; i < g1.size(); ++i)
    EXPECT_TRUE(torch::allclose(g1[i], g4[i], 1e-5, 1e-7))
        << "parameter " << i << " max diff " << (g1[i] - g4[i]).abs().max().item<double>();
}

TEST(GradReducer, UnusedParameterContributesZeros) {
  MpiCommunicator comm(mpi());
  auto used = torch::ones({3}, torch::requires_grad()), unused = torch::ones({2}, torch::requires_grad());
  GradReducer reducer({used, unused}, comm, 25.0);
  reducer.prepare(true);
  (used * static_cast<double>(mpi().rank() + 1)).sum().backward();
  reducer.finish();  // must not wait for a hook that never fires
  const int n = mpi().size();
  EXPECT_TRUE(torch::allclose(used.grad(), torch::full({3}, (n + 1) / 2.0)));
  EXPECT_TRUE(torch::equal(unused.grad(), torch::zeros({2})));
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

// --dist.compress: 16-bit all-reduces through MPI's user-defined sums, at every rank
// count: the result equals the float32 average to the format's precision, and every rank
// holds the same bits.
TEST(GradReducer, CompressedWireMatchesFloat32WithinTheFormat) {
  torch::manual_seed(31 + mpi().rank());
  const auto x = torch::randn({8, 1, 28, 28});
  const auto y = torch::randint(0, 10, {8}, torch::kLong);
  MpiCommunicator comm(mpi());
  auto full = seeded_model(12);
  GradReducer r32(full->parameters(), comm, 0.05);
  const auto g32 = grads_of(*full, x, y, 0, 8, &r32);
  for (const WireType wire : {WireType::kBF16, WireType::kF16}) {
    auto model = seeded_model(12);
    GradReducer r16(model->parameters(), comm, 0.05, /*overlap=*/true, wire);
    ASSERT_GT(r16.buckets().size(), 2u);
    EXPECT_EQ(r16.wire_bytes_per_step() * 2, r32.wire_bytes_per_step());
    const auto g16 = grads_of(*model, x, y, 0, 8, &r16);
    EXPECT_EQ(r16.launched_in_backward(), static_cast<int>(r16.buckets().size()));
    const double rel = wire == WireType::kBF16 ? 3 * std::ldexp(1.0, -8) * mpi().size() : 3 * std::ldexp(1.0, -11) * mpi().size();
    for (size_t i = 0; i < g32.size(); ++i) {
      ASSERT_EQ(g16[i].scalar_type(), torch::kFloat);
      EXPECT_TRUE(model->parameters()[i].grad().is_same(r16.slot(i))) << "the widened sums are the gradients";
      const double scale = g32[i].abs().max().item<double>();
      EXPECT_LE((g16[i] - g32[i]).abs().max().item<double>(), rel * scale + 1e-7) << wire_name(wire) << " parameter " << i;
      // bit-identical on every rank
      auto lo = g16[i].clone(), hi = g16[i].clone();
      MPI_Allreduce(MPI_IN_PLACE, lo.data_ptr<float>(), static_cast<int>(lo.numel()), MPI_FLOAT, MPI_MIN, mpi().comm());
      MPI_Allreduce(MPI_IN_PLACE, hi.data_ptr<float>(), static_cast<int>(hi.numel()), MPI_FLOAT, MPI_MAX, mpi().comm());
      EXPECT_TRUE(torch::equal(lo, hi)) << wire_name(wire) << " parameter " << i;
    }
  }
}

namespace {

// A small conv net's parameters, the conv weight in channels-last memory (as on a GPU), and
// its loss on rank R's batch at STEP (the same data wherever it is computed).
struct TinyConv {
  std::vector<torch::Tensor> params;
  explicit TinyConv(bool channels_last) {
    torch::manual_seed(17);
    torch::Tensor w = torch::randn({6, 2, 3, 3}) * 0.3, b = torch::randn({6}) * 0.1, fc = torch::randn({4, 6 * 5 * 5}) * 0.1;
    if (channels_last) w = w.contiguous(torch::MemoryFormat::ChannelsLast);
    for (torch::Tensor t : {w, b, fc}) params.push_back(t.requires_grad_());
  }
  torch::Tensor loss(int r, int step) const {
    torch::manual_seed(1000 + 10 * static_cast<uint64_t>(step) + static_cast<uint64_t>(r));
    const auto x = torch::randn({5, 2, 7, 7}), y = torch::randint(0, 4, {5}, torch::kLong);
    const auto h = torch::relu(torch::conv2d(x, params[0], params[1])).flatten(1);
    return torch::nn::functional::cross_entropy(torch::mm(h, params[2].t()), y);
  }
};

// The average over every rank of each rank's gradients, computed in this process alone.
std::vector<torch::Tensor> average_of_ranks(int step) {
  TinyConv net(/*channels_last=*/false);
  std::vector<torch::Tensor> sum;
  for (int r = 0; r < mpi().size(); ++r) {
    for (auto& p : net.params) p.mutable_grad().reset();
    net.loss(r, step).backward();
    for (size_t i = 0; i < net.params.size(); ++i)
      if (r == 0) sum.push_back(net.params[i].grad().clone());
      else sum[i] += net.params[i].grad();
  }
  for (auto& g : sum) g /= mpi().size();
  return sum;
}

}  // namespace

// Gradients as views of their bucket: after a reduction each .grad is the reducer's slot —
// the parameter's shape and strides (channels-last stays channels-last), at the same address
// every step — and holds the average over ranks. Several buckets, launched during backward.
TEST(GradReducer, GradientsAreTheirBucketSlotsWithTheParametersStrides) {
  MpiCommunicator comm(mpi());
  TinyConv net(/*channels_last=*/true);
  GradReducer reducer(net.params, comm, /*bucket_mb=*/0.0);  // a bucket per parameter
  ASSERT_EQ(reducer.buckets().size(), 3u);
  std::vector<const void*> where;
  for (int step = 0; step < 3; ++step) {
    for (auto& p : net.params) p.mutable_grad().reset();  // zero_grad, set to none
    reducer.prepare(true);
    net.loss(mpi().rank(), step).backward();
    EXPECT_EQ(reducer.launched_in_backward(), 3) << "step " << step;
    reducer.finish();
    const auto want = average_of_ranks(step);
    for (size_t i = 0; i < net.params.size(); ++i) {
      const torch::Tensor& g = net.params[i].grad();
      EXPECT_TRUE(g.is_same(reducer.slot(i))) << "step " << step << " parameter " << i << " is not its slot";
      EXPECT_EQ(g.strides(), net.params[i].strides()) << "parameter " << i;
      EXPECT_TRUE(torch::allclose(g, want[i], 1e-5, 1e-7)) << "step " << step << " parameter " << i;
      if (step == 0) where.push_back(g.data_ptr());
      EXPECT_EQ(g.data_ptr(), where[i]) << "step " << step << ": parameter " << i << "'s gradient moved";
    }
  }
  EXPECT_TRUE(net.params[0].grad().is_contiguous(torch::MemoryFormat::ChannelsLast));
}

// An optimizer that zeroes gradients in place (set_to_none false) keeps the views: backward
// accumulates straight into the bucket, over micro-steps too, and the result is bit for bit
// the one of gradients set to none. An optimizer's step reads them either way.
TEST(GradReducer, GradientsZeroedInPlaceStayInTheBucketAndAverageTheSame) {
  MpiCommunicator comm(mpi());
  TinyConv a(/*channels_last=*/true), b(/*channels_last=*/true);
  GradReducer ra(a.params, comm, 0.001), rb(b.params, comm, 0.001);
  torch::optim::SGD opt_a(a.params, torch::optim::SGDOptions(0.1).momentum(0.9)),
      opt_b(b.params, torch::optim::SGDOptions(0.1).momentum(0.9));
  for (int step = 0; step < 3; ++step) {
    opt_a.zero_grad(/*set_to_none=*/false);
    opt_b.zero_grad(/*set_to_none=*/true);
    for (int micro = 0; micro < 2; ++micro) {
      ra.prepare(micro == 1);
      rb.prepare(micro == 1);
      (a.loss(mpi().rank(), 2 * step + micro) / 2.0).backward();
      (b.loss(mpi().rank(), 2 * step + micro) / 2.0).backward();
      if (step > 0 && micro == 0)  // before any reduction of this step: backward added into the bucket itself
        for (size_t i = 0; i < a.params.size(); ++i)
          EXPECT_EQ(a.params[i].grad().data_ptr(), ra.slot(i).data_ptr()) << "step " << step << " parameter " << i;
    }
    ra.finish();
    rb.finish();
    for (size_t i = 0; i < a.params.size(); ++i) {
      EXPECT_TRUE(a.params[i].grad().is_same(ra.slot(i))) << "step " << step << " parameter " << i;
      EXPECT_TRUE(torch::equal(a.params[i].grad(), b.params[i].grad())) << "step " << step << " parameter " << i;
    }
    opt_a.step();
    opt_b.step();
  }
  for (size_t i = 0; i < a.params.size(); ++i) EXPECT_TRUE(torch::equal(a.params[i], b.params[i])) << i;
}

// A second gradient for a parameter after its slot was filled (two backward passes under one
// prepare(true)) is an error: autograd has added it into a bucket that may be on the wire,
// so the step cannot be trusted (before, the second contribution was silently dropped).
TEST(GradReducer, ASecondGradientInOneStepIsAnError) {
  MpiCommunicator comm(mpi());
  TinyConv net(/*channels_last=*/false);
  GradReducer reducer(net.params, comm, 25.0);
  reducer.prepare(true);
  net.loss(mpi().rank(), 0).backward();
  try {
    net.loss(mpi().rank(), 1).backward();
    FAIL() << "a second backward pass in one step went through";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("received a second gradient in one step"), std::string::npos) << e.what();
  }
  reducer.finish();  // the step still ends on every rank (each rank threw alike)
}

// A .grad replaced between steps (here by code outside the reducer) is copied in, not lost.
TEST(GradReducer, AReplacedGradientIsCopiedIntoItsSlot) {
  MpiCommunicator comm(mpi());
  auto p = torch::zeros({2, 3}, torch::requires_grad());
  GradReducer reducer({p}, comm, 25.0);
  for (int step = 0; step < 2; ++step) {
    p.mutable_grad() = torch::full({2, 3}, static_cast<float>(mpi().rank() + step));
    reducer.average_gradients();
    EXPECT_TRUE(p.grad().is_same(reducer.slot(0)));
    EXPECT_TRUE(torch::allclose(p.grad(), torch::full({2, 3}, (mpi().size() - 1) / 2.0 + step))) << step;
  }
}

// A parameter that is a strided view (gaps in its memory) gets a contiguous slot and the right
// average; one tensor listed twice is refused (its one gradient would fill two slots).
TEST(GradReducer, AStridedParameterIsAveragedAndATensorListedTwiceRefused) {
  MpiCommunicator comm(mpi());
  auto strided = torch::empty_strided({2, 3}, {6, 2}).fill_(1.0).requires_grad_();
  ASSERT_FALSE(strided.is_non_overlapping_and_dense());
  GradReducer reducer({strided}, comm, 25.0);
  reducer.prepare(true);
  (strided * static_cast<double>(mpi().rank() + 1)).sum().backward();
  reducer.finish();
  EXPECT_TRUE(torch::allclose(strided.grad(), torch::full({2, 3}, (mpi().size() + 1) / 2.0)));
  EXPECT_TRUE(strided.grad().is_same(reducer.slot(0)));
  auto p = torch::zeros({3}, torch::requires_grad());
  try {
    GradReducer twice({p, p}, comm, 25.0);
    FAIL() << "a parameter listed twice was taken";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("listed twice"), std::string::npos) << e.what();
  }
}

TEST(MpiCommunicator, SixteenBitSumsAcrossRanks) {
  MpiCommunicator comm(mpi());
  const int n = mpi().size();
  // 300000 elements: past Open MPI's segment sizes, so the user-defined sum runs on pieces.
  std::vector<uint16_t> bf(300000), f16(300000);
  for (size_t i = 0; i < bf.size(); ++i) {
    bf[i] = to_bf16(static_cast<float>(i % 64) * 0.25f + static_cast<float>(mpi().rank()));
    f16[i] = to_f16(static_cast<float>(i % 64) * 0.25f + static_cast<float>(mpi().rank()));
  }
  comm.start_allreduce(bf.data(), bf.size(), WireType::kBF16, "bf16");
  comm.start_allreduce(f16.data(), f16.size(), WireType::kF16, "fp16");
  comm.wait_all();
  for (size_t i = 0; i < bf.size(); ++i) {
    const float exact = n * static_cast<float>(i % 64) * 0.25f + n * (n - 1) / 2.0f;  // exactly representable
    ASSERT_EQ(from_bf16(bf[i]), exact) << i;
    ASSERT_EQ(from_f16(f16[i]), exact) << i;
  }
}

TEST(GradReducer, AverageTensorsAveragesFloatBuffersOnly) {
  MpiCommunicator comm(mpi());
  auto f = torch::full({4}, static_cast<float>(mpi().rank())), i = torch::full({1}, 5 + mpi().rank(), torch::kLong);
  average_tensors({f, i}, comm);
  EXPECT_TRUE(torch::allclose(f, torch::full({4}, (mpi().size() - 1) / 2.0)));
  EXPECT_EQ(i.item<int64_t>(), 5 + mpi().rank());  // integer buffers are left alone
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
  const std::string dir = fresh_shared_dir("eval");
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
    ro.mode = std::string(mode) == "memory" ? io::ReadMode::kMemory : io::ReadMode::kStream;
    ro.block_samples = 5;
    const io::RankReader reader(dir, m, "test", mpi().rank(), mpi().size(), ro);
    const EvalResult e = evaluate(*model, reader, maker, 16, 2, 10, mpi(), /*hflip=*/false);
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
  // The confusion matrix (so recall, F1) is the single-process one, cell by cell.
  const auto cells = torch::bincount(y * 10 + logits.argmax(1), {}, 100).contiguous();
  const std::vector<int64_t> ref(cells.data_ptr<int64_t>(), cells.data_ptr<int64_t>() + 100);
  EXPECT_EQ(dist.confusion, ref);
  const ClassMetrics cm = class_metrics(ref, 10);
  EXPECT_DOUBLE_EQ(dist.macro_f1, cm.macro_f1);
  for (size_t c = 0; c < 10; ++c)
    if (!std::isnan(cm.recall[c])) EXPECT_DOUBLE_EQ(dist.metrics.recall[c], cm.recall[c]);
  mpi().barrier();
}
