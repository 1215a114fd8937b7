// The video models (c3d, r3d) and activation checkpointing: clip logits, sizes, refusals,
// and checkpointed training equal to the ordinary one (gradients and BatchNorm statistics).
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/model/registry.hpp"
#include "core/optim/amp.hpp"
#include "model/onednn_as_trained.hpp"
#include "test_helpers.hpp"

using namespace lockstep;

namespace {

io::DatasetSpec clip_spec(std::vector<int64_t> shape = {1, 9, 16, 16}, int64_t classes = 5) {
  io::DatasetSpec s;
  s.name = "clips";
  s.sample_shape = std::move(shape);
  s.num_classes = classes;
  return s;
}

}  // namespace

TEST(VideoModels, MapClipsToClassLogits) {
  for (const auto& [name, depth] : std::vector<std::pair<std::string, int>>{{"c3d", 18}, {"r3d", 10}, {"r3d", 18}}) {
    for (const auto& shape : {std::vector<int64_t>{1, 9, 16, 16}, std::vector<int64_t>{3, 4, 80, 72}}) {
      auto net = make_model(ModelOptions{name, 0.0, 4, depth}, clip_spec(shape));
      net->eval();
      std::vector<int64_t> batch{2};
      batch.insert(batch.end(), shape.begin(), shape.end());
      EXPECT_EQ(net->forward(torch::randn(batch)).sizes(), (std::vector<int64_t>{2, 5})) << name << depth;
    }
  }
  // The sizes the model help states (1 channel, 5 classes).
  EXPECT_EQ(make_model(ModelOptions{"r3d", 0.0, 0, 18}, clip_spec())->parameter_count(), 2074005);
  EXPECT_EQ(make_model(ModelOptions{"r3d", 0.0, 0, 10}, clip_spec())->parameter_count(), 898005);
  EXPECT_EQ(make_model(ModelOptions{"c3d", 0.0, 0, 18}, clip_spec())->parameter_count(), 1164325);
}

TEST(VideoModels, RefuseDataAndOptionsTheyCannotTake) {
  EXPECT_ERROR_CONTAINS(make_model(ModelOptions{"c3d", 0.0, 4, 18}, clip_spec({1, 28, 28})),
                        "needs video clips [C,T,H,W]");
  EXPECT_ERROR_CONTAINS(make_model(ModelOptions{"r3d", 0.0, 4, 34}, clip_spec()), "must be 10 or 18 for r3d");
  EXPECT_ERROR_CONTAINS(make_model(ModelOptions{"cnn", 0.0, 4, 18}, clip_spec()), "needs image samples");
  EXPECT_ERROR_CONTAINS(make_model(ModelOptions{"mlp", 0.0, 4, 18, true}, clip_spec()),
                        "--model.checkpoint-activations is built into resnet, r3d and c3d");
}

// One training step with and without checkpointing from the same weights: the same loss,
// the same gradients for every parameter, the same BatchNorm running statistics (the
// recomputation must not update them twice).
TEST(VideoModels, CheckpointedActivationsGiveTheSameStep) {
  for (const std::string name : {"c3d", "r3d"}) {
    for (const auto& shape : {std::vector<int64_t>{1, 8, 16, 16}}) {
      torch::manual_seed(3);
      auto plain = make_model(ModelOptions{name, 0.0, 4, 10}, clip_spec(shape));
      torch::manual_seed(3);
      auto ckpt = make_model(ModelOptions{name, 0.0, 4, 10, true}, clip_spec(shape));
      const auto x = torch::randn({3, 1, 8, 16, 16});
      const auto y = torch::tensor({0, 3, 4});
      for (auto* net : {plain.get(), ckpt.get()}) {
        net->train();
        torch::nn::functional::cross_entropy(net->forward(x), y).backward();
      }
      const auto a = plain->named_parameters(), b = ckpt->named_parameters();
      for (const auto& p : a) {
        ASSERT_TRUE(p.value().grad().defined()) << name << " " << p.key();
        ASSERT_TRUE(b[p.key()].grad().defined()) << name << " " << p.key() << " got no gradient when checkpointed";
        EXPECT_TRUE(torch::allclose(p.value().grad(), b[p.key()].grad(), 1e-4, 1e-5)) << name << " " << p.key();
      }
      const auto ba = plain->named_buffers(), bb = ckpt->named_buffers();
      for (const auto& buf : ba)
        EXPECT_TRUE(torch::allclose(buf.value(), bb[buf.key()])) << name << " buffer " << buf.key();
    }
  }
}

// Under autocast (--amp), over several optimizer steps: the recomputation casts the weights
// as they are now, not as an earlier recomputation cast them (autocast caches a weight's
// low-precision copy until the outermost autocast scope ends; a recomputation is a scope of
// its own), so checkpointed training stays the ordinary one, step after step. Each model
// trains alone (another model's autocast scope in between would clear the cache).
TEST(VideoModels, CheckpointedActivationsUnderAutocastUseTheCurrentWeights) {
  struct Trace {
    std::vector<torch::Tensor> losses;
    std::vector<std::map<std::string, torch::Tensor>> grads;
  };
  const auto train = [](bool checkpointed) {
    torch::manual_seed(5);
    auto net = make_model(ModelOptions{"r3d", 0.0, 4, 10, checkpointed}, clip_spec({1, 8, 16, 16}));
    const lockstep::testing::OnednnAsTrained onednn(*net, Amp::kBf16);  // as lockstep trains it
    net->train();
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.5));
    Trace t;
    for (int step = 0; step < 3; ++step) {
      torch::manual_seed(40 + step);
      const auto x = torch::randn({3, 1, 8, 16, 16});
      const auto y = torch::tensor({0, 3, 4});
      net->zero_grad();
      torch::Tensor loss;
      {
        AutocastGuard autocast(Amp::kBf16, torch::kCPU);
        loss = torch::nn::functional::cross_entropy(net->forward(x), y);
      }
      loss.backward();
      t.losses.push_back(loss.detach());
      t.grads.emplace_back();
      for (const auto& p : net->named_parameters()) t.grads.back()[p.key()] = p.value().grad().clone();
      opt.step();
    }
    return t;
  };
  const Trace plain = train(false), ckpt = train(true);
  for (size_t step = 0; step < plain.losses.size(); ++step) {
    ASSERT_TRUE(torch::allclose(plain.losses[step], ckpt.losses[step], 1e-5, 1e-6))
        << "step " << step << ": loss " << plain.losses[step].item<double>() << " vs checkpointed "
        << ckpt.losses[step].item<double>();
    for (const auto& [name, g] : plain.grads[step])
      ASSERT_TRUE(torch::allclose(g, ckpt.grads[step].at(name), 1e-3, 1e-5)) << "step " << step << " " << name;
  }
}
