// The fused BatchNorm (+ residual) + ReLU (core/model/bn_act.hpp) on the CPU: the same steps
// and arithmetic its CUDA kernels run (bn_act_math.hpp), checked against ATen's batch_norm +
// add + relu in float64 — outputs, running estimates and every gradient, for each layout
// and element type — then inside the built-in models (fused == unfused training, and with
// activation checkpointing), and its refusals.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/model/bn_act.hpp"
#include "core/model/memory_format.hpp"
#include "core/model/registry.hpp"
#include "core/model/sync_bn.hpp"
#include "core/optim/amp.hpp"
#include "model/bn_act_check.hpp"
#include "model/onednn_as_trained.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using namespace lockstep::testing;

TEST(BnAct, EqualsAtenBatchNormAddReluForwardAndBackward) {
  const std::vector<std::vector<int64_t>> shapes{{64, 16}, {4, 16, 6, 5}, {3, 8, 2, 4, 5}, {2, 64, 7, 7}};
  for (const auto& shape : shapes)
    for (const auto dtype : {torch::kFloat, torch::kBFloat16, torch::kHalf})
      for (const bool residual : {false, true}) {
        const Case c{shape, dtype, residual};
        expect_matches(c, run(c, true), run(c, false));
      }
}

// The partial sums are over a fixed partition of the rows: one thread or two, the same bits.
TEST(BnAct, ResultsDoNotDependOnTheThreadCount) {
  const int threads = torch::get_num_threads();
  const Case c{{8, 32, 9, 9}, torch::kBFloat16, true};
  torch::set_num_threads(1);
  const Result one = run(c, true);
  torch::set_num_threads(2);
  const Result two = run(c, true);
  torch::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(one.y, two.y));
  EXPECT_TRUE(torch::equal(one.dx, two.dx));
  EXPECT_TRUE(torch::equal(one.dweight, two.dweight));
  EXPECT_TRUE(torch::equal(one.running_var, two.running_var));
}

// NaN passes the ReLU (as ATen's relu) and its gradient, so an overflow is still seen.
TEST(BnAct, NaNPassesTheReluLikeAtens) {
  torch::Tensor x = torch::randn({16, 8});
  x.index_put_({3, 2}, std::nan(""));
  const torch::Tensor y = bn_act({x, {}, torch::ones({8}), torch::zeros({8}), {}, {}, 0.1, 1e-5});
  EXPECT_TRUE(y.select(1, 2).isnan().all().item<bool>());  // the channel's mean is NaN
  EXPECT_FALSE(y.select(1, 3).isnan().any().item<bool>());
}

// A gradient arriving as a dense view at an odd offset (a slice of a larger one) is taken
// as the aligned one would be (on the CPU the path; the GPU test checks the copy it needs).
TEST(BnAct, TakesAGradientAtAnyOffset) {
  bool odd = false, even = true;
  EXPECT_TRUE(torch::equal(grad_at_offset(true, torch::kCPU, &odd), grad_at_offset(false, torch::kCPU, &even)));
  EXPECT_TRUE(odd) << "the sliced gradient should arrive misaligned";
  EXPECT_FALSE(even);
}

TEST(BnAct, RefusesWhatItCannotTake) {
  const auto in = [](torch::Tensor x) {
    const int64_t c = x.size(1);
    return BnActInputs{x, {}, torch::ones({c}), torch::zeros({c}), torch::zeros({c}), torch::ones({c}), 0.1, 1e-5};
  };
  EXPECT_EQ(bn_act_obstacle(in(torch::randn({2, 8, 3, 3}).contiguous(c10::MemoryFormat::ChannelsLast))), "");
  EXPECT_NE(bn_act_obstacle(in(torch::randn({2, 8, 3, 3}))).find("channels are not innermost"), std::string::npos);
  EXPECT_NE(bn_act_obstacle(in(torch::randn({2, 8, 5}))).find("not 2-, 4- or 5-d"), std::string::npos);
  EXPECT_NE(bn_act_obstacle(in(torch::randn({4, 6}))).find("not a multiple of 4"), std::string::npos);
  EXPECT_NE(bn_act_obstacle(in(torch::randn({4, 12}, torch::kBFloat16))).find("not a multiple of 8"),
            std::string::npos);
  EXPECT_NE(bn_act_obstacle(in(torch::randn({1, 8}))).find("fewer than 2 values"), std::string::npos);
  EXPECT_NE(bn_act_obstacle(in(torch::randn({4, 8}, torch::kDouble))).find("dtype"), std::string::npos);
  EXPECT_NE(bn_act_obstacle(in(torch::randn({5, 8}).view(-1).slice(0, 1, 33).view({4, 8}))).find("aligned"),
            std::string::npos);
  BnActInputs bad_residual = in(torch::randn({4, 8}));
  bad_residual.residual = torch::randn({4, 8}, torch::kBFloat16);
  EXPECT_NE(bn_act_obstacle(bad_residual).find("residual"), std::string::npos);
  BnActInputs bad_weight = in(torch::randn({4, 8}));
  bad_weight.weight = torch::ones({8}, torch::kDouble);
  EXPECT_NE(bn_act_obstacle(bad_weight).find("parameters"), std::string::npos);
  EXPECT_ERROR_CONTAINS(bn_act(in(torch::randn({4, 6}))), "bn_act: 6 channels");
}

// BatchNorm::forward_relu: fused only in training, channels-last, and set_fused(true); the
// state (names, running estimates, batch count) is the unfused layer's.
TEST(BnAct, BatchNormFusesOnlyWhereAsked) {
  BatchNorm fused(8), plain(8);
  fused->set_fused(true);
  const torch::Tensor cl = torch::randn({4, 8, 5, 5}).contiguous(c10::MemoryFormat::ChannelsLast);
  EXPECT_TRUE(fused->fuses(cl));
  EXPECT_FALSE(plain->fuses(cl));
  EXPECT_FALSE(fused->fuses(torch::randn({4, 8, 5, 5})));
  const torch::Tensor a = fused->forward_relu(cl), b = plain->forward_relu(cl);
  EXPECT_TRUE(torch::allclose(a, b, 1e-5, 1e-5));
  EXPECT_EQ(fused->named_buffers()["num_batches_tracked"].item<int64_t>(), 1);
  EXPECT_TRUE(torch::allclose(fused->named_buffers()["running_var"], plain->named_buffers()["running_var"], 1e-6, 1e-6));
  EXPECT_EQ(fused_bn_report(*fused), "fused BatchNorm+ReLU: 1 of 1 BatchNorm+ReLU layer(s) ran fused");
  BatchNorm nchw(8);
  nchw->set_fused(true);
  nchw->forward_relu(torch::randn({4, 8, 5, 5}));  // unfused, and the report says why
  EXPECT_EQ(fused_bn_report(*nchw),
            "fused BatchNorm+ReLU: 0 of 1 BatchNorm+ReLU layer(s) ran fused; not : the channels are not innermost "
            "(channels-last)");
  fused->eval();
  EXPECT_FALSE(fused->fuses(cl));  // evaluation: the running estimates, by ATen
  EXPECT_EQ(set_fused_bn(*fused, false), 1);
}

// Whole models, from the same weights over 3 SGD steps: float32 fused == unfused within float
// rounding (losses, first gradients, BatchNorm estimates); under bf16 autocast the fused
// gradients are as close to float32's as ATen's bf16 ones are (a tiny batch's bf16 gradients
// are 7-30% off float32's either way); fused with activation checkpointing == fused without,
// bit for bit.
TEST(BnAct, ModelsTrainTheSameFusedAndUnfused) {
  struct Setup {
    std::string name;
    int depth;
    std::vector<int64_t> shape;
  };
  struct Trace {
    std::vector<double> losses;
    std::vector<torch::Tensor> buffers;
    torch::Tensor first_grads;
  };
  for (const Setup& s : {Setup{"resnet", 18, {3, 16, 16}}, Setup{"r3d", 10, {1, 8, 16, 16}}, Setup{"cnn", 18, {1, 12, 12}},
                         Setup{"c3d", 18, {1, 8, 16, 16}}}) {
    const auto train = [&](bool fuse, bool checkpoint, bool bf16) {
      torch::manual_seed(3);
      io::DatasetSpec spec;
      spec.name = "t", spec.sample_shape = s.shape, spec.num_classes = 4;
      auto net = make_model(ModelOptions{s.name, 0.0, 8, s.depth, checkpoint && s.name != "cnn"}, spec);
      // As lockstep trains it: bf16 3-d convolutions without oneDNN (core/model/onednn_guard.hpp),
      // whose output is contiguous, so on the CPU r3d's and c3d's BatchNorms do not fuse there.
      const lockstep::testing::OnednnAsTrained onednn(*net, bf16 ? Amp::kBf16 : Amp::kNone);
      use_channels_last(*net);
      EXPECT_GT(set_fused_bn(*net, fuse), 0);
      net->train();
      torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1));
      Trace t;
      for (int step = 0; step < 3; ++step) {
        torch::manual_seed(20 + step);
        std::vector<int64_t> batch{6};
        batch.insert(batch.end(), s.shape.begin(), s.shape.end());
        const torch::Tensor x = torch::randn(batch), y = torch::tensor({0, 1, 2, 3, 0, 1});
        opt.zero_grad();
        torch::Tensor loss;
        {
          AutocastGuard autocast(bf16 ? Amp::kBf16 : Amp::kNone, torch::kCPU);
          loss = torch::nn::functional::cross_entropy(net->forward(x), y);
        }
        if (step == 0 && !checkpoint) EXPECT_EQ(fused_nodes(loss) > 0, fuse && !onednn.off()) << s.name << (bf16 ? " bf16" : "");
        if (step == 0 && fuse && s.name == "resnet")  // the stem and 2 per block; the 3 shortcut BNs have no ReLU
          EXPECT_EQ(fused_bn_report(*net), "fused BatchNorm+ReLU: 17 of 17 BatchNorm+ReLU layer(s) ran fused");
        loss.backward();
        if (step == 0) {
          std::vector<torch::Tensor> g;
          for (const auto& p : net->parameters()) g.push_back(p.grad().flatten().to(torch::kDouble));
          t.first_grads = torch::cat(g);
        }
        opt.step();
        t.losses.push_back(loss.item<double>());
      }
      for (const auto& b : net->named_buffers()) t.buffers.push_back(b.value().to(torch::kDouble));
      return t;
    };
    const auto grad_error = [](const Trace& a, const Trace& ref) {
      return ((a.first_grads - ref.first_grads).norm() / ref.first_grads.norm()).item<double>();
    };
    const auto same = [&](const Trace& a, const Trace& b, const std::string& what) {
      EXPECT_EQ(a.losses, b.losses) << s.name << " " << what;
      EXPECT_TRUE(torch::equal(a.first_grads, b.first_grads)) << s.name << " " << what;
      for (size_t i = 0; i < a.buffers.size(); ++i) EXPECT_TRUE(torch::equal(a.buffers[i], b.buffers[i])) << s.name << " " << what;
    };
    const Trace plain = train(false, false, false), fused = train(true, false, false);
    for (size_t i = 0; i < plain.losses.size(); ++i)
      EXPECT_NEAR(fused.losses[i], plain.losses[i], 1e-4 * (1 + std::abs(plain.losses[i]))) << s.name << " step " << i;
    EXPECT_LT(grad_error(fused, plain), 1e-5) << s.name;
    for (size_t i = 0; i < plain.buffers.size(); ++i)
      EXPECT_TRUE(torch::allclose(fused.buffers[i], plain.buffers[i], 1e-3, 1e-4)) << s.name << " buffer " << i;
    same(train(true, true, false), fused, "checkpointed");

    const Trace plain16 = train(false, false, true), fused16 = train(true, false, true);
    EXPECT_LT(grad_error(fused16, plain), 1.1 * grad_error(plain16, plain) + 1e-3)
        << s.name << " bf16: ATen's bf16 gradients are " << grad_error(plain16, plain) << " off float32's";
    EXPECT_NEAR(fused16.losses[0], plain16.losses[0], 1e-2) << s.name << " bf16";
    same(train(true, true, true), fused16, "bf16 checkpointed");
  }
}
