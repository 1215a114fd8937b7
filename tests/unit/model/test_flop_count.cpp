// core/model/flop_count: the forward FLOPs counted from the autograd graph equal the hand
// count (2 x multiply-adds) for convolutions of 1 and 2 dimensions, grouped ones, a linear
// layer on a flat and on a 3-d input (addmm and mm), a frozen layer included; nothing else
// (normalisation, pooling, activations) is counted; the model comes back as it was (mode,
// requires_grad, BatchNorm statistics). The peak table knows the parts MFU is judged on.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/model/flop_count.hpp"
#include "core/model/registry.hpp"
#include "test_helpers.hpp"

using namespace lockstep;

namespace {

// [1, 8, 8] -> conv 1->4 (3x3, pad 1) -> BN -> ReLU -> grouped conv 4->4 (groups 2, 3x3,
// pad 1) -> max-pool 2 -> flatten 64 -> linear 64->10; and a 1-d branch over the rows:
// [8 rows as channels, 8] -> conv1d 8->6 (k 3, pad 1) -> [6, 8] -> linear 8->5 per row
// (a 3-d input: matmul) -> sum.
struct Toy : Net {
  torch::nn::Conv2d conv{torch::nn::Conv2dOptions(1, 4, 3).padding(1)};
  torch::nn::BatchNorm2d bn{4};
  torch::nn::Conv2d grouped{torch::nn::Conv2dOptions(4, 4, 3).padding(1).groups(2)};
  torch::nn::Linear head{64, 10};
  torch::nn::Conv1d rows{torch::nn::Conv1dOptions(8, 6, 3).padding(1)};
  torch::nn::Linear per_row{8, 5};
  Toy() {
    register_module("conv", conv);
    register_module("bn", bn);
    register_module("grouped", grouped);
    register_module("head", head);
    register_module("rows", rows);
    register_module("per_row", per_row);
  }
  torch::Tensor forward(torch::Tensor x) override {
    torch::Tensor a = torch::max_pool2d(grouped(torch::relu(bn(conv(x)))), 2).flatten(1);
    torch::Tensor b = per_row(rows(x.squeeze(1)));  // [N, 6, 5]
    return head(a) + b.sum({1, 2}).unsqueeze(1);
  }
};

}  // namespace

TEST(FlopCount, EqualsTheHandCountOfConvolutionsAndMatrixProducts) {
  Toy toy;
  toy.per_row->weight.requires_grad_(false);  // a frozen layer is counted too
  io::DatasetSpec spec = lockstep::testing::shape_spec({1, 8, 8}, 10);
  const torch::Tensor mean_before = toy.bn->running_mean.clone();
  const FlopCount f = count_forward_flops(toy, spec, torch::kCPU);
  const double conv = 2.0 * (4 * 8 * 8) * (1 * 3 * 3);     // 4608
  const double grouped = 2.0 * (4 * 8 * 8) * (2 * 3 * 3);  // 9216: 2 input channels per group
  const double head = 2.0 * 10 * 64;                        // 1280
  const double rows = 2.0 * (6 * 8) * (8 * 3);              // 2304
  const double per_row = 2.0 * (6 * 5) * 8;                // 480
  EXPECT_EQ(f.layers, 5);
  EXPECT_DOUBLE_EQ(f.forward_per_sample, conv + grouped + head + rows + per_row);
  EXPECT_DOUBLE_EQ(f.train_per_sample(), 3 * f.forward_per_sample);
  EXPECT_TRUE(toy.is_training()) << "the model is left in training mode";
  EXPECT_FALSE(toy.per_row->weight.requires_grad()) << "and its frozen layer frozen";
  EXPECT_TRUE(torch::equal(toy.bn->running_mean, mean_before)) << "no BatchNorm statistics updated";
}

TEST(FlopCount, BuiltInConvNetsCountEveryLayer) {
  const io::DatasetSpec spec = lockstep::testing::shape_spec({3, 32, 32}, 10);
  auto resnet = make_model(ModelOptions{"resnet", 0.0}, spec);
  const FlopCount f = count_forward_flops(*resnet, spec, torch::kCPU);
  EXPECT_GE(f.layers, 20) << "ResNet-18: 20 convolutions and the head";
  EXPECT_GT(f.forward_per_sample, 1e7);
  // At ImageNet's 224x224 the count is ResNet-18's published 1.8 GMACs (3.6 GFLOP).
  const io::DatasetSpec imagenet = lockstep::testing::shape_spec({3, 224, 224}, 100);
  auto r18 = make_model(ModelOptions{"resnet", 0.0}, imagenet);
  const double g = count_forward_flops(*r18, imagenet, torch::kCPU).forward_per_sample / 1e9;
  EXPECT_NEAR(g, 3.64, 0.1);
}

TEST(FlopCount, PeaksOfTheGpusMfuIsJudgedOn) {
  EXPECT_DOUBLE_EQ(*gpu_peak_flops("NVIDIA H100 80GB HBM3", true), 989.4e12);
  EXPECT_DOUBLE_EQ(*gpu_peak_flops("NVIDIA H100 80GB HBM3", false), 494.7e12);
  EXPECT_DOUBLE_EQ(*gpu_peak_flops("NVIDIA H100 PCIe", true), 756.0e12);
  EXPECT_DOUBLE_EQ(*gpu_peak_flops("NVIDIA H200", true), 989.4e12);
  EXPECT_DOUBLE_EQ(*gpu_peak_flops("NVIDIA A100-SXM4-80GB", true), 312.0e12);
  EXPECT_DOUBLE_EQ(*gpu_peak_flops("NVIDIA A10", true), 125.0e12);
  EXPECT_FALSE(gpu_peak_flops("Some Future GPU", true).has_value());
}
