// Mirror test-time augmentation (--eval.hflip): the averaged probabilities, invariance
// under mirroring, clips, and the refusal of samples that are not images or clips.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/eval/mirror.hpp"
#include "core/model/registry.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using lockstep::testing::shape_spec;

namespace {

std::shared_ptr<Net> eval_model(const std::string& name, std::vector<int64_t> shape) {
  torch::manual_seed(3);
  auto net = make_model(ModelOptions{name, 0.0, 4, 18}, shape_spec(std::move(shape), 5));
  net->eval();
  return net;
}

}  // namespace

TEST(Mirror, OffIsTheModelsLogits) {
  auto net = eval_model("cnn", {1, 8, 8});
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({6, 1, 8, 8});
  EXPECT_TRUE(torch::equal(eval_logits(*net, x, {}, false), class_logits(*net, x, {}).to(torch::kFloat)));
}

TEST(Mirror, AveragesTheProbabilitiesOfImageAndMirror) {
  auto net = eval_model("cnn", {1, 8, 8});
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({6, 1, 8, 8});
  const auto want = (torch::softmax(net->forward(x), 1) + torch::softmax(net->forward(x.flip({3})), 1)) / 2;
  const auto got = eval_logits(*net, x, {}, true);
  EXPECT_TRUE(torch::allclose(torch::softmax(got, 1), want, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(got.exp().sum(1), torch::ones({6}), 1e-5, 1e-6));  // log-probabilities
  // The model alone is not mirror-symmetric; the averaged prediction is.
  EXPECT_FALSE(torch::allclose(net->forward(x), net->forward(x.flip({3})), 1e-4, 1e-5));
  EXPECT_TRUE(torch::allclose(got, eval_logits(*net, x.flip({3}), {}, true), 1e-5, 1e-6));
}

TEST(Mirror, ClipsMirrorEveryFrameAlongWidth) {
  auto net = eval_model("c3d", {1, 4, 8, 8});
  torch::NoGradGuard no_grad;
  const auto x = torch::randn({2, 1, 4, 8, 8});
  const auto want = (torch::softmax(net->forward(x), 1) + torch::softmax(net->forward(x.flip({4})), 1)) / 2;
  EXPECT_TRUE(torch::allclose(torch::softmax(eval_logits(*net, x, {}, true), 1), want, 1e-5, 1e-6));
}

TEST(Mirror, OnlyImagesAndClipsWithClassLabels) {
  EXPECT_NO_THROW(check_eval_hflip(false, shape_spec({3, 32}, 5), "series"));
  EXPECT_NO_THROW(check_eval_hflip(true, shape_spec({1, 28, 28}, 5), "images"));
  EXPECT_NO_THROW(check_eval_hflip(true, shape_spec({3, 8, 32, 32}, 5), "clips"));
  EXPECT_ERROR_CONTAINS(check_eval_hflip(true, shape_spec({3, 32}, 5), "series"),
                        "--eval.hflip mirrors images [C,H,W] and clips [C,T,H,W]; series has samples of shape [3,32]");
  io::DatasetSpec ragged = shape_spec({3, 8, 20}, 5);
  ragged.ragged = true;
  EXPECT_ERROR_CONTAINS(check_eval_hflip(true, ragged, "speech"), "speech holds variable-length sequences");
  auto net = eval_model("mlp", {12});
  EXPECT_ERROR_CONTAINS(eval_logits(*net, torch::randn({2, 12}), {}, true), "--eval.hflip needs [N, C, H, W]");
}
