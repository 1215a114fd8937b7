// core/train/state_snapshot: a snapshot taken between steps serialises, later and after more
// steps have changed the live tensors, to exactly the payload serialize_state() gave at the
// snapshot's step — byte for byte on the CPU — for SGD with momentum, Adam and AdamW
// (amsgrad), channels-last weights and BatchNorm buffers, with the extras (generator states,
// loss scaler); an optimizer it does not know is serialised at once; the payload resumes.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "core/model/memory_format.hpp"
#include "core/model/registry.hpp"
#include "core/train/checkpoint_state.hpp"
#include "core/train/state_snapshot.hpp"
#include "test_helpers.hpp"

using namespace lockstep;

namespace {

io::DatasetSpec gray28() { return lockstep::testing::shape_spec({1, 28, 28}, 10); }

void step(Net& model, torch::optim::Optimizer& opt, int seed) {
  torch::manual_seed(seed);
  const torch::Tensor x = torch::randn({4, 1, 28, 28}), y = torch::randint(0, 10, {4});
  opt.zero_grad();
  torch::nn::functional::cross_entropy(model.forward(x), y).backward();
  opt.step();
}

ExtraState extras() {
  ExtraState e;
  e.rng = torch::arange(48, torch::kUInt8).view({2, 24});
  e.amp_scaler = {65536.0, 3.0, 2000.0};
  return e;
}

// The snapshot's payload, serialised after two more steps, equals serialize_state's at the
// snapshot's step; both load into a fresh model and optimizer that then step alike.
template <typename Make>
void expect_snapshot_equals_serialize_state(Make make_optimizer, bool channels_last) {
  torch::manual_seed(1);
  auto model = make_model(ModelOptions{"cnn", 0.0}, gray28());
  if (channels_last) use_channels_last(*model);
  auto opt = make_optimizer(model->parameters());
  step(*model, *opt, 10);
  step(*model, *opt, 11);
  const std::string want = serialize_state(*model, *opt, extras());
  const auto snapshot = std::make_shared<StateSnapshot>(*model, *opt, extras());
  step(*model, *opt, 12);  // the training thread goes on; the live tensors change
  step(*model, *opt, 13);
  const std::string got = snapshot->serialize();
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << "the snapshot's payload differs from serialize_state's";

  torch::manual_seed(2);
  auto a = make_model(ModelOptions{"cnn", 0.0}, gray28()), b = make_model(ModelOptions{"cnn", 0.0}, gray28());
  auto oa = make_optimizer(a->parameters()), ob = make_optimizer(b->parameters());
  ExtraState ea, eb;
  load_state(want, *a, oa.get(), "want", &ea);
  load_state(got, *b, ob.get(), "got", &eb);
  EXPECT_TRUE(torch::equal(eb.rng, extras().rng));
  EXPECT_EQ(eb.amp_scaler, extras().amp_scaler);
  step(*a, *oa, 20);
  step(*b, *ob, 20);
  const auto pa = a->parameters(), pb = b->parameters();
  for (size_t i = 0; i < pa.size(); ++i) ASSERT_TRUE(torch::equal(pa[i], pb[i])) << "parameter " << i;
}

}  // namespace

TEST(StateSnapshot, SgdWithMomentumEqualsSerializeStateAfterTheModelMovedOn) {
  const auto sgd = [](std::vector<torch::Tensor> p) {
    return std::make_unique<torch::optim::SGD>(p, torch::optim::SGDOptions(0.1).momentum(0.9));
  };
  expect_snapshot_equals_serialize_state(sgd, false);
  expect_snapshot_equals_serialize_state(sgd, true);
}

TEST(StateSnapshot, AdamAndAdamWEqualSerializeState) {
  expect_snapshot_equals_serialize_state(
      [](std::vector<torch::Tensor> p) {
        return std::make_unique<torch::optim::Adam>(p, torch::optim::AdamOptions(1e-3).amsgrad(true));
      },
      false);
  expect_snapshot_equals_serialize_state(
      [](std::vector<torch::Tensor> p) {
        return std::make_unique<torch::optim::AdamW>(p, torch::optim::AdamWOptions(1e-3).weight_decay(0.01));
      },
      true);
}

TEST(StateSnapshot, AnOptimizerItDoesNotKnowIsSerialisedAtOnce) {
  expect_snapshot_equals_serialize_state(
      [](std::vector<torch::Tensor> p) {
        return std::make_unique<torch::optim::RMSprop>(p, torch::optim::RMSpropOptions(1e-3).momentum(0.5));
      },
      false);
}
