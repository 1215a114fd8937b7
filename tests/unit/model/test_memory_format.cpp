// --model.memory-format: a conv net run channels-last computes the same function with the
// same gradients as contiguous, and its weights leave it (safetensors, a checkpoint) in
// the same order; which models and devices auto picks it for.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "core/base/error.hpp"
#include "core/model/memory_format.hpp"
#include "core/model/registry.hpp"
#include "core/model/weights.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using lockstep::testing::shape_spec;

namespace {

// Two copies of one model (same weights), the second channels-last.
std::pair<std::shared_ptr<Net>, std::shared_ptr<Net>> twins(const char* name, const io::DatasetSpec& s) {
  torch::manual_seed(3);
  // width 16: narrower resnets/r3ds have 1x1 strided convs channels-last must not run on
  // CPU (channels_last_hazard, tested below)
  auto a = make_model(ModelOptions{name, 0.0, 16, 18}, s);
  torch::manual_seed(3);
  auto b = make_model(ModelOptions{name, 0.0, 16, 18}, s);
  EXPECT_GT(use_channels_last(*b), 0) << name;
  return {a, b};
}

}  // namespace

TEST(MemoryFormat, ChannelsLastComputesTheSameFunctionAndGradients) {
  struct Case {
    const char* name;
    std::vector<int64_t> shape;
  };
  for (const Case& c : {Case{"cnn", {1, 28, 28}}, Case{"resnet", {3, 32, 32}}, Case{"c3d", {1, 8, 16, 16}},
                        Case{"r3d", {1, 8, 16, 16}}}) {
    auto [a, b] = twins(c.name, shape_spec(c.shape, 5));
    EXPECT_FALSE(a->channels_last());
    EXPECT_TRUE(b->channels_last());
    for (const auto& p : b->parameters())
      if (p.dim() == 4) EXPECT_EQ(p.suggest_memory_format(), torch::MemoryFormat::ChannelsLast) << c.name;
      else if (p.dim() == 5) EXPECT_EQ(p.suggest_memory_format(), torch::MemoryFormat::ChannelsLast3d) << c.name;
    std::vector<int64_t> shape{4};
    shape.insert(shape.end(), c.shape.begin(), c.shape.end());
    const torch::Tensor x = torch::randn(shape);  // contiguous in, as the loader gives it
    a->train();
    b->train();
    const torch::Tensor ya = a->forward(x), yb = b->forward(x);
    EXPECT_TRUE(torch::allclose(ya, yb, 1e-4, 1e-5)) << c.name << ": " << (ya - yb).abs().max().item<double>();
    ya.square().sum().backward();
    yb.square().sum().backward();
    const auto pa = a->named_parameters(), pb = b->named_parameters();
    for (const auto& item : pa) {
      const torch::Tensor ga = item.value().grad(), gb = pb[item.key()].grad();
      EXPECT_TRUE(torch::allclose(ga, gb, 1e-3, 1e-4)) << c.name << " " << item.key();
      // element by element in the logical order, whatever the strides
      EXPECT_TRUE(torch::allclose(ga.reshape({-1}), gb.reshape({-1}), 1e-3, 1e-4)) << c.name << " " << item.key();
    }
  }
}

TEST(MemoryFormat, WeightsLeaveInTheSameOrder) {
  auto [a, b] = twins("cnn", shape_spec({1, 28, 28}, 10));
  const io::SafeTensors sa = to_safetensors(named_state(*a), "cnn", {}), sb = to_safetensors(named_state(*b), "cnn", {});
  ASSERT_EQ(sa.tensors.size(), sb.tensors.size());
  for (size_t i = 0; i < sa.tensors.size(); ++i) EXPECT_EQ(sa.tensors[i].data, sb.tensors[i].data) << sa.tensors[i].name;
  // A channels-last model loads a contiguous model's state and stays channels-last.
  torch::NoGradGuard no_grad;
  for (auto& p : a->parameters()) p.add_(0.5);
  auto pa = a->named_parameters();
  for (auto& item : b->named_parameters()) item.value().copy_(pa[item.key()]);
  const torch::Tensor x = torch::randn({2, 1, 28, 28});
  a->eval();
  b->eval();
  EXPECT_TRUE(torch::allclose(a->forward(x), b->forward(x), 1e-4, 1e-5));
  EXPECT_EQ(b->named_parameters()["conv1.weight"].suggest_memory_format(), torch::MemoryFormat::ChannelsLast);  // one input channel
}

TEST(MemoryFormat, AutoPicksConvNetsOnCpuAndOnGpus) {
  auto cnn = make_model(ModelOptions{"cnn", 0.0, 4, 18}, shape_spec({1, 28, 28}, 10));
  auto mlp = make_model(ModelOptions{"mlp", 0.0, 4, 18}, shape_spec({1, 28, 28}, 10));
  EXPECT_TRUE(wants_channels_last(MemoryFormat::kAuto, *cnn, "cnn", /*cuda=*/false));
  EXPECT_TRUE(wants_channels_last(MemoryFormat::kAuto, *cnn, "cnn", /*cuda=*/true));  // float32 and AMP alike
  EXPECT_FALSE(wants_channels_last(MemoryFormat::kContiguous, *cnn, "cnn", false));
  EXPECT_TRUE(wants_channels_last(MemoryFormat::kChannelsLast, *cnn, "cnn", true));
  EXPECT_FALSE(wants_channels_last(MemoryFormat::kAuto, *mlp, "mlp", false));
  EXPECT_ERROR_CONTAINS(wants_channels_last(MemoryFormat::kChannelsLast, *mlp, "mlp", false),
                        "--model.memory-format channels-last is for conv nets over images or clips (cnn, resnet, c3d, "
                        "r3d), not model mlp");
}

// oneDNN issue 6035: channels-last 1x1 strided convs with few input channels get wrong
// weight gradients and corrupt the heap on CPU. Auto keeps such a model NCHW and says why,
// an explicit channels-last is refused; GPUs (cuDNN) and wide models are unaffected.
TEST(MemoryFormat, NarrowStridedOneByOneConvsStayContiguousOnCpu) {
  auto narrow = make_model(ModelOptions{"resnet", 0.0, 4, 18}, shape_spec({1, 28, 28}, 10));
  auto wide = make_model(ModelOptions{"resnet", 0.0, 16, 18}, shape_spec({1, 28, 28}, 10));
  auto cnn = make_model(ModelOptions{"cnn", 0.0, 4, 18}, shape_spec({1, 28, 28}, 10));
  auto r3d = make_model(ModelOptions{"r3d", 0.0, 4, 10}, shape_spec({1, 8, 16, 16}, 5));
  EXPECT_EQ(channels_last_hazard(*narrow).rfind("layer layer2_0.down_conv is a 1x1 convolution with stride 2x2 and 4 "
                                                "input channel(s)", 0), 0u)
      << channels_last_hazard(*narrow);
  EXPECT_NE(channels_last_hazard(*r3d).find("and 4 input channel(s)"), std::string::npos)
      << channels_last_hazard(*r3d);
  EXPECT_EQ(channels_last_hazard(*wide), "");
  EXPECT_EQ(channels_last_hazard(*cnn), "");
  std::string note;
  EXPECT_FALSE(wants_channels_last(MemoryFormat::kAuto, *narrow, "resnet", false, &note));
  EXPECT_EQ(note.rfind("model resnet runs contiguous (NCHW) on CPU, not channels-last: layer layer2_0.down_conv", 0), 0u)
      << note;
  note.clear();
  EXPECT_TRUE(wants_channels_last(MemoryFormat::kAuto, *wide, "resnet", false, &note));
  EXPECT_EQ(note, "");
  EXPECT_TRUE(wants_channels_last(MemoryFormat::kAuto, *narrow, "resnet", /*cuda=*/true));
  EXPECT_TRUE(wants_channels_last(MemoryFormat::kChannelsLast, *narrow, "resnet", true));
  EXPECT_ERROR_CONTAINS(wants_channels_last(MemoryFormat::kChannelsLast, *narrow, "resnet", false),
                        "--model.memory-format channels-last on CPU: layer layer2_0.down_conv");
}
