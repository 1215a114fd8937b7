// --model.sync-bn: BatchNorm over the global batch. Each rank normalises its slice of a
// batch with statistics from all ranks; outputs, input gradients, parameter gradients
// (summed over ranks) and running statistics must equal one process running plain
// BatchNorm on the whole batch. At 1 rank it is plain BatchNorm.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "core/dist/communicator.hpp"
#include "core/dist/mpi_communicator.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "core/model/sync_bn.hpp"
#include "mpi_test_env.hpp"

using namespace lockstep;
using lockstep::testing::mpi;

namespace {

void expect_close(const torch::Tensor& a, const torch::Tensor& b, const char* what) {
  EXPECT_TRUE(torch::allclose(a, b, 1e-4, 1e-5)) << what << ": max diff " << (a - b).abs().max().item<double>();
}

}  // namespace

TEST(SyncBatchNorm, MatchesBatchNormOnTheGlobalBatch) {
  const int world = mpi().size(), rank = mpi().rank();
  const int64_t global = 8, per = global / world;
  torch::manual_seed(5);
  const torch::Tensor x_all = torch::randn({global, 3, 4, 4}) * 2 + 1;
  const torch::Tensor w_all = torch::randn({global, 3, 4, 4});

  // Reference: one process, the whole batch, local BatchNorm.
  BatchNorm ref(3);
  torch::Tensor x_ref = x_all.clone().requires_grad_(true);
  const torch::Tensor y_ref = ref(x_ref);
  (y_ref * w_all).sum().backward();

  // Synchronised: this rank's slice.
  MpiCommunicator comm(mpi());
  BatchNorm bn(3);
  ASSERT_EQ(set_sync_bn(*bn, &comm), 1);
  torch::Tensor x = x_all.slice(0, rank * per, (rank + 1) * per).clone().requires_grad_(true);
  const torch::Tensor y = bn(x);
  (y * w_all.slice(0, rank * per, (rank + 1) * per)).sum().backward();

  expect_close(y, y_ref.slice(0, rank * per, (rank + 1) * per), "output");
  expect_close(x.grad(), x_ref.grad().slice(0, rank * per, (rank + 1) * per), "input gradient");
  for (const char* name : {"weight", "bias"}) {
    torch::Tensor g = bn->named_parameters()[name].grad().clone();
    comm.allreduce_sum(g.data_ptr<float>(), static_cast<size_t>(g.numel()));  // the reducer's sum (before 1/N)
    expect_close(g, ref->named_parameters()[name].grad(), name);
  }
  expect_close(bn->named_buffers()["running_mean"], ref->named_buffers()["running_mean"], "running_mean");
  expect_close(bn->named_buffers()["running_var"], ref->named_buffers()["running_var"], "running_var");

  // Evaluation mode uses the (identical) running statistics, with no communication.
  bn->eval();
  ref->eval();
  torch::NoGradGuard no_grad;
  expect_close(bn(x_all), ref(x_all), "eval output");
}
