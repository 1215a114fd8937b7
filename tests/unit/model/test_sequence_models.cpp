// Sequence (CTC) training pieces: the gru model, CTC loss, ragged batches.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "core/data/batch_maker.hpp"
#include "core/model/registry.hpp"
#include "core/optim/loss.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using lockstep::testing::speech_spec;

TEST(SequenceModels, GruIgnoresPaddingAndHalvesTime) {
  torch::manual_seed(0);
  auto net = make_model(ModelOptions{"gru", 0.0, 8, 18}, speech_spec());
  net->eval();
  ASSERT_TRUE(net->sequence_output());
  torch::Tensor x = torch::randn({2, 3, 20});
  const torch::Tensor lengths = torch::tensor({20, 11}, torch::kLong);
  torch::Tensor out_len;
  const torch::Tensor y = net->forward_sequence(x, lengths, &out_len);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 10, 4}));  // tokens + blank
  EXPECT_EQ(out_len[0].item<int64_t>(), 10);
  EXPECT_EQ(out_len[1].item<int64_t>(), 6);  // floor((11-1)/2)+1
  // Garbage past sample 1's length changes nothing in its valid frames (the conv sees
  // two steps past the end at most; the GRU, packed, none).
  torch::Tensor x2 = x.clone();
  x2.index_put_({1, torch::indexing::Slice(), torch::indexing::Slice(13, torch::indexing::None)}, 100.0);
  torch::Tensor out_len2;
  const torch::Tensor y2 = net->forward_sequence(x2, lengths, &out_len2);
  EXPECT_TRUE(torch::allclose(y.index({1, torch::indexing::Slice(0, 5)}), y2.index({1, torch::indexing::Slice(0, 5)})));
}

TEST(SequenceModels, ModelsRefuseTheWrongKindOfTarget) {
  EXPECT_ERROR_CONTAINS(make_model(ModelOptions{"cnn1d", 0.0, 8, 18}, speech_spec()), "has sequence targets (CTC)");
  io::DatasetSpec classes = speech_spec();
  classes.max_target_length = 0;
  classes.tokens.clear();
  classes.labeled = true;
  classes.num_classes = 3;
  EXPECT_ERROR_CONTAINS(make_model(ModelOptions{"gru", 0.0, 8, 18}, classes), "no sequence targets");
}

TEST(SequenceModels, CtcLossMatchesTorchAndTrains) {
  torch::manual_seed(1);
  const torch::Tensor logits = torch::randn({2, 6, 4}, torch::requires_grad());
  const torch::Tensor out_len = torch::tensor({6, 4}, torch::kLong);
  const torch::Tensor targets = torch::tensor({1, 2, 1, 0}, torch::kLong);  // [1,2,1] and [0]
  const torch::Tensor target_len = torch::tensor({3, 1}, torch::kLong);
  const torch::Tensor ours = ctc_loss_mean(logits, out_len, targets, target_len, 3);
  const torch::Tensor lp = torch::log_softmax(logits, -1).transpose(0, 1);
  const torch::Tensor per = torch::ctc_loss(lp, targets, out_len, target_len, 3, at::Reduction::None);
  EXPECT_NEAR(ours.item<double>(), ((per[0] / 3 + per[1] / 1) / 2).item<double>(), 1e-5);
  // A free logit table learns to emit [1,2,1] and [0].
  torch::Tensor w = torch::zeros({2, 6, 4}, torch::requires_grad());
  torch::optim::Adam opt({w}, 0.1);
  double first = 0, last = 0;
  for (int i = 0; i < 60; ++i) {
    opt.zero_grad();
    const torch::Tensor loss = ctc_loss_mean(w, out_len, targets, target_len, 3);
    loss.backward();
    opt.step();
    (i == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, first * 0.1);
}

TEST(SequenceModels, RaggedBatchesAreCutAndMasked) {
  const io::DatasetSpec s = speech_spec();
  const BatchMaker maker(s, torch::kCPU);
  std::vector<float> raw(2 * 3 * 20, 5.0f);  // raw 5 -> (5-1)/2 = 2 where valid
  const std::vector<int64_t> records{-1, 7, 1, 2, -1, -1, -1, 12, 0, -1, -1, -1};
  const torch::Tensor x = maker.inputs(raw.data(), 2, records.data());
  EXPECT_EQ(x.sizes(), (std::vector<int64_t>{2, 3, 12}));  // cut to the longest, 12
  EXPECT_FLOAT_EQ(x[0][1][6].item<float>(), 2.0f);
  EXPECT_FLOAT_EQ(x[0][1][7].item<float>(), 0.0f);  // padding: zero after normalisation
  EXPECT_FLOAT_EQ(x[1][2][11].item<float>(), 2.0f);
  const SequenceTargets t = maker.targets(records.data(), 2);
  EXPECT_TRUE(torch::equal(t.targets, torch::tensor({1, 2, 0}, torch::kLong)));
  EXPECT_TRUE(torch::equal(t.target_lengths, torch::tensor({2, 1}, torch::kLong)));
  EXPECT_TRUE(torch::equal(t.lengths, torch::tensor({7, 12}, torch::kLong)));
}

TEST(SequenceModels, LmuEmitsOneCausalOutputPerFrame) {
  torch::manual_seed(0);
  auto net = make_model(ModelOptions{"lmu", 0.0, 8, 18}, speech_spec());
  net->eval();
  ASSERT_TRUE(net->sequence_output());
  const torch::Tensor x = torch::randn({2, 3, 20});
  const torch::Tensor lengths = torch::tensor({20, 9}, torch::kLong);
  torch::Tensor out_len;
  const torch::Tensor y = net->forward_sequence(x, lengths, &out_len);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 20, 4}));
  EXPECT_TRUE(torch::equal(out_len, lengths));
  torch::Tensor x2 = x.clone();
  x2.index_put_({1, torch::indexing::Slice(), torch::indexing::Slice(9, torch::indexing::None)}, 50.0);
  torch::Tensor out_len2;
  const torch::Tensor y2 = net->forward_sequence(x2, lengths, &out_len2);
  EXPECT_TRUE(torch::allclose(y.index({1, torch::indexing::Slice(0, 9)}), y2.index({1, torch::indexing::Slice(0, 9)})));
}

TEST(SequenceModels, RaggedClassifiersIgnorePadding) {
  io::DatasetSpec s;
  s.name = "vowels";
  s.sample_shape = {3, 24};
  s.dtype = io::DType::kFloat32;
  s.num_classes = 4;
  s.ragged = true;
  s.mean = {0, 0, 0};
  s.std = {1, 1, 1};
  for (const char* name : {"cnn1d", "lmu"}) {
    torch::manual_seed(0);
    auto net = make_model(ModelOptions{name, 0.0, 8, 18}, s);
    net->eval();
    ASSERT_TRUE(net->takes_ragged()) << name;
    const torch::Tensor x = torch::randn({2, 3, 24});
    const torch::Tensor lengths = torch::tensor({24, 13}, torch::kLong);
    torch::Tensor x2 = x.clone();
    x2.index_put_({1, torch::indexing::Slice(), torch::indexing::Slice(13, torch::indexing::None)}, 0.0);
    const torch::Tensor a = net->forward_ragged(x2, lengths);
    EXPECT_EQ(a.sizes(), (std::vector<int64_t>{2, 4})) << name;
    // Sample 1 alone, cut to its 13 steps: the same logits as in the padded batch (the
    // cnn's BatchNorm is in eval mode, so batch composition does not matter).
    const torch::Tensor alone = net->forward_ragged(x2.index({torch::indexing::Slice(1, 2), torch::indexing::Slice(),
                                                               torch::indexing::Slice(0, 13)}),
                                                    torch::tensor({13}, torch::kLong));
    EXPECT_TRUE(torch::allclose(a[1], alone[0], 1e-4, 1e-5)) << name << a[1] << alone[0];
    // A batch of series of 1 to 3 steps (bucketed together): cnn1d's pools had no output
    // (LibTorch refused it); each sample's logits are those it has in a longer batch.
    for (int64_t t = 1; t <= 3; ++t) {
      torch::Tensor x3 = x.clone();
      x3.index_put_({torch::indexing::Slice(), torch::indexing::Slice(), torch::indexing::Slice(t, torch::indexing::None)},
                    0.0);
      const torch::Tensor in_long = net->forward_ragged(x3, torch::tensor({t, t}, torch::kLong));
      const torch::Tensor cut = net->forward_ragged(
          x3.index({torch::indexing::Slice(), torch::indexing::Slice(), torch::indexing::Slice(0, t)}),
          torch::tensor({t, t}, torch::kLong));
      EXPECT_TRUE(torch::allclose(cut, in_long, 1e-4, 1e-5)) << name << " " << t << cut << in_long;
    }
  }
  EXPECT_ERROR_CONTAINS(make_model(ModelOptions{"mlp", 0.0, 8, 18}, s), "is ragged (variable-length series)");
}
