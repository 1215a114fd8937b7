// core/model/flop_count: the forward FLOPs counted from the autograd graph equal the hand
// count (2 x multiply-adds) for convolutions of 1 and 2 dimensions, grouped and transposed
// ones, linear layers on a flat and on a 3-d input, a product whose first operand is a
// constant (no edge: K from the second), a frozen layer included; nothing else
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
// pad 1) -> max-pool 2 -> [4, 4, 4] -> flatten 64 -> linear 64->10; the pooled map also
// through a transposed conv 4->2 (2x2, stride 2) -> [2, 8, 8] -> sum; a constant [3, 64] @ a
// parameter [64, 2] -> sum; and a 1-d branch over the rows: [8 rows as channels, 8] ->
// conv1d 8->6 (k 3, pad 1) -> [6, 8] -> linear 8->5 per row (a 3-d input) -> sum.
struct Toy : Net {
  torch::nn::Conv2d conv{torch::nn::Conv2dOptions(1, 4, 3).padding(1)};
  torch::nn::BatchNorm2d bn{4};
  torch::nn::Conv2d grouped{torch::nn::Conv2dOptions(4, 4, 3).padding(1).groups(2)};
  torch::nn::Linear head{64, 10};
  torch::nn::Conv1d rows{torch::nn::Conv1dOptions(8, 6, 3).padding(1)};
  torch::nn::Linear per_row{8, 5};
  torch::nn::ConvTranspose2d up{torch::nn::ConvTranspose2dOptions(4, 2, 2).stride(2)};
  torch::Tensor mix;
  Toy() {
    register_module("up", up);
    mix = register_parameter("mix", torch::randn({64, 2}));
    register_module("conv", conv);
    register_module("bn", bn);
    register_module("grouped", grouped);
    register_module("head", head);
    register_module("rows", rows);
    register_module("per_row", per_row);
  }
  torch::Tensor forward(torch::Tensor x) override {
    const torch::Tensor pooled = torch::max_pool2d(grouped(torch::relu(bn(conv(x)))), 2);
    const torch::Tensor a = pooled.flatten(1);
    const torch::Tensor b = per_row(rows(x.squeeze(1)));                // [N, 6, 5]
    const torch::Tensor c = up(pooled).sum({1, 2, 3});                  // [N]
    const torch::Tensor d = torch::mm(torch::ones({3, 64}), mix).sum();  // A: a constant
    return head(a) + (b.sum({1, 2}) + c + d).unsqueeze(1);
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
  const double up = 2.0 * (4 * 4 * 4) * (2 * 2 * 2);        // 1024: input elements x C_out x kernel
  const double mix = 2.0 * (3 * 2) * 64;                    // 768: K from the parameter's rows
  EXPECT_EQ(f.layers, 7);
  EXPECT_DOUBLE_EQ(f.forward_per_sample, conv + grouped + head + rows + per_row + up + mix);
  EXPECT_EQ(f.unseen, "") << "nothing hidden in fused kernels here";
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
  EXPECT_DOUBLE_EQ(*gpu_peak_flops("NVIDIA H100 NVL", true), 835.0e12);
  EXPECT_DOUBLE_EQ(*gpu_peak_flops("NVIDIA L40", true), 181.0e12) << "not the L4's";
  EXPECT_DOUBLE_EQ(*gpu_peak_flops("NVIDIA L4", true), 121.0e12);
  EXPECT_DOUBLE_EQ(*gpu_peak_flops("NVIDIA GH200 480GB", true), 989.4e12) << "not the H200's by a substring";
  EXPECT_DOUBLE_EQ(*gpu_peak_flops("NVIDIA GB200", true), 2500.0e12) << "not the B200's";
  EXPECT_FALSE(gpu_peak_flops("NVIDIA RTX A3000 Laptop GPU", true).has_value()) << "not an A30";
  EXPECT_FALSE(gpu_peak_flops("Some Future GPU", true).has_value());
}
