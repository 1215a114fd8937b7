// core/model/weights: torchvision names for the ResNets, partial loading and its report.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/model/weights.hpp"
#include "test_helpers.hpp"

using namespace lockstep;

TEST(Weights, ResNetNamesAreTorchvisionsBothWays) {
  const std::vector<std::pair<std::string, std::string>> pairs{
      {"stem.weight", "conv1.weight"},
      {"stem_bn.running_mean", "bn1.running_mean"},
      {"layer1_0.conv1.weight", "layer1.0.conv1.weight"},
      {"layer2_0.down_conv.weight", "layer2.0.downsample.0.weight"},
      {"layer4_1.down_bn.num_batches_tracked", "layer4.1.downsample.1.num_batches_tracked"},
      {"fc.bias", "fc.bias"}};
  for (const auto& [ours, theirs] : pairs) {
    EXPECT_EQ(export_name("resnet", ours), theirs);
    EXPECT_EQ(import_name("resnet", theirs), ours);
  }
  EXPECT_EQ(export_name("cnn", "conv1.weight"), "conv1.weight");  // other models keep their names
  EXPECT_EQ(model_family("torchscript:/m.pt"), "torchscript");
}

TEST(Weights, PartialLoadingReportsEveryTensor) {
  io::DatasetSpec spec = lockstep::testing::tiny_spec(3);
  spec.sample_shape = {12};
  auto model = make_model(ModelOptions{"mlp", 0.0, 8, 18}, spec);
  NamedTensors src{{"fc1.weight", torch::full({8, 12}, 0.5)},   // loads
                   {"fc2.weight", torch::zeros({3, 3})},          // wrong shape
                   {"out.bias", torch::ones({3})},                 // excluded
                   {"extra.weight", torch::ones({1})}};            // not in the model
  const LoadReport r = load_named(*model, src, {"out."});
  EXPECT_EQ(r.loaded, (std::vector<std::string>{"fc1.weight"}));
  EXPECT_EQ(r.mismatched.size(), 1u);
  EXPECT_EQ(r.excluded, (std::vector<std::string>{"out.bias"}));
  EXPECT_EQ(r.unexpected, (std::vector<std::string>{"extra.weight"}));
  EXPECT_EQ(r.missing, (std::vector<std::string>{"fc1.bias", "fc2.bias", "out.weight"}));  // fc2.weight: mismatched
  EXPECT_TRUE(torch::allclose(model->named_parameters()["fc1.weight"], torch::full({8, 12}, 0.5)));
  EXPECT_NE(r.table().find("shape mismatched      1  fc2.weight [3, 3] vs [8, 8]"), std::string::npos) << r.table();
  EXPECT_EQ(freeze(*model, {"fc1."}), 2);
  EXPECT_FALSE(model->named_parameters()["fc1.weight"].requires_grad());
  EXPECT_TRUE(model->named_parameters()["out.weight"].requires_grad());
  // A misspelt prefix froze nothing, silently (the info line said "0 parameter tensor(s)").
  EXPECT_ERROR_CONTAINS(freeze(*model, {"fc2.", "fc_2."}),
                        "--model.freeze fc_2.: no parameter's name starts with it (the model's: fc1.weight, fc1.bias,");
}
