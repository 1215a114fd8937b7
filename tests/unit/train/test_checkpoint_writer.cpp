// core/train: the background checkpoint writer and the RNG state a checkpoint carries.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "test_helpers.hpp"
#include "core/base/error.hpp"
#include "core/train/checkpoint_state.hpp"
#include "core/train/checkpoint_writer.hpp"

using namespace lockstep;

TEST(CheckpointWriter, RunsJobsInOrderAndReportsTheirErrors) {
  CheckpointWriter w;
  std::vector<int> done;
  w.submit([&] { done.push_back(1); });
  w.submit([&] { done.push_back(2); });
  w.wait();
  EXPECT_EQ(done, (std::vector<int>{1, 2}));
  w.submit([] { throw Error("disk full"); });
  EXPECT_ERROR_CONTAINS(w.wait(), "disk full");
  w.submit([&] { done.push_back(3); });  // the writer survives a failed job
  w.wait();
  EXPECT_EQ(done.size(), 3u);
}

TEST(TrainState, RngStateRoundTripRepeatsTheRandomStream) {
  torch::manual_seed(3);
  const auto state = rng_state_bytes(torch::kCPU);
  const auto a = torch::rand({4});
  set_rng_state_bytes(state, torch::kCPU);
  EXPECT_TRUE(torch::equal(a, torch::rand({4})));
}
