// lmu_scan (core/model/lmu_scan.hpp) and the LMU trained through it: the same values and
// gradients as the cell written step by step with autograd (lmu.cpp's equations, as
// docs/python's reference module runs them) for every forward the model has, in float64
// to rounding and in float32 within a stated tolerance; autocast never reaches the
// recurrence; what it refuses.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <functional>
#include <map>
#include <string>

#include "core/model/lmu_scan.hpp"
#include "core/model/registry.hpp"
#include "core/optim/amp.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using lockstep::testing::shape_spec;
using lockstep::testing::speech_spec;

namespace {

// The scan as its header defines it, one autograd operator at a time.
torch::Tensor scan_as_written(const torch::Tensor& c, const torch::Tensor& w, int64_t hidden) {
  torch::Tensor s = torch::zeros_like(c[0]);
  std::vector<torch::Tensor> all;
  for (int64_t t = 0; t < c.size(0); ++t) {
    const torch::Tensor z = c[t] + s.mm(w);
    s = torch::cat({torch::tanh(z.narrow(1, 0, hidden)), z.narrow(1, hidden, z.size(1) - hidden)}, 1);
    all.push_back(s);
  }
  return torch::stack(all);
}

struct Cell {
  std::map<std::string, torch::Tensor> p;  // parameters and buffers by name
  explicit Cell(const std::shared_ptr<Net>& net) {
    for (const auto& x : net->named_parameters()) p[x.key()] = x.value();
    for (const auto& x : net->named_buffers()) p[x.key()] = x.value();
  }
  // Every step's h [N, L, H] of lmu.cpp's cell, step by step (dropout 0).
  torch::Tensor hidden(torch::Tensor x) const {
    if (x.dim() == 2) x = x.unsqueeze(1);
    const torch::Tensor xs = x.permute({2, 0, 1});
    const torch::Tensor ux = xs.matmul(p.at("e_x.weight").t());
    const torch::Tensor hx = xs.matmul(p.at("w_x.weight").t()) + p.at("w_x.bias");
    torch::Tensor h = torch::zeros({x.size(0), p.at("w_h.weight").size(0)}, x.options());
    torch::Tensor m = torch::zeros({x.size(0), p.at("abar_t").size(0)}, x.options());
    std::vector<torch::Tensor> hs;
    for (int64_t t = 0; t < xs.size(0); ++t) {
      const torch::Tensor u = ux[t] + h.mm(p.at("e_h.weight").t()) + m.mm(p.at("e_m.weight").t());
      m = m.mm(p.at("abar_t")) + u * p.at("bbar");
      h = torch::tanh(hx[t] + h.mm(p.at("w_h.weight").t()) + m.mm(p.at("w_m.weight").t()));
      hs.push_back(h);
    }
    return torch::stack(hs, 1);
  }
  torch::Tensor fc(const torch::Tensor& h) const { return h.matmul(p.at("fc.weight").t()) + p.at("fc.bias"); }
};

// e_h and e_m start at zero: give them values, so that every term of the cell is exercised.
void wake_feedback(const std::shared_ptr<Net>& net) {
  torch::NoGradGuard no_grad;
  for (const auto& x : net->named_parameters())
    if (x.key() == "e_h.weight" || x.key() == "e_m.weight") x.value().normal_(0.0, 0.3);
}

double max_rel(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item<double>();
}

// Output and every parameter's gradient of NET (through RUN) against the cell (through
// REF), for the same random upstream gradient.
void expect_cell(const std::shared_ptr<Net>& net, const std::function<torch::Tensor()>& run,
                 const std::function<torch::Tensor(const Cell&)>& ref, double tolerance) {
  const torch::Tensor y = run();
  const torch::Tensor dy = torch::randn_like(y);
  net->zero_grad();
  (y * dy).sum().backward();
  std::map<std::string, torch::Tensor> grads;
  for (const auto& x : net->named_parameters()) grads[x.key()] = x.value().grad().clone();
  net->zero_grad();
  const Cell cell(net);
  const torch::Tensor y_ref = ref(cell);
  (y_ref * dy).sum().backward();
  EXPECT_LT(max_rel(y, y_ref), tolerance) << "output";
  for (const auto& x : net->named_parameters())
    EXPECT_LT(max_rel(grads[x.key()], x.value().grad()), tolerance) << x.key();
}

}  // namespace

TEST(LmuScan, EqualsTheRecurrenceWrittenOutInFloat64) {
  torch::manual_seed(1);
  for (const int64_t steps : {1, 2, 37}) {
    const torch::Tensor c = torch::randn({steps, 3, 7}, torch::kFloat64).requires_grad_();
    const torch::Tensor w = (0.4 * torch::randn({7, 7}, torch::kFloat64)).requires_grad_();
    const torch::Tensor s = lmu_scan(c, w, 4);
    const torch::Tensor ds = torch::randn_like(s);
    const auto g = torch::autograd::grad({(s * ds).sum()}, {c, w});
    const torch::Tensor s_ref = scan_as_written(c, w, 4);
    const auto g_ref = torch::autograd::grad({(s_ref * ds).sum()}, {c, w});
    EXPECT_LT(max_rel(s, s_ref), 1e-13) << steps;
    EXPECT_LT(max_rel(g[0], g_ref[0]), 1e-12) << steps;
    if (steps == 1) {
      EXPECT_EQ(g[1].abs().max().item<double>(), 0.0);  // s_{-1} = 0: W takes no part
    } else {
      EXPECT_LT(max_rel(g[1], g_ref[1]), 1e-12) << steps;
    }
  }
}

TEST(LmuScan, TheModelEqualsTheCellInEveryForwardInFloat64) {
  torch::manual_seed(2);
  // Classifying a window: the last step's h.
  auto cls = make_model(ModelOptions{"lmu", 0.0, 12, 18}, shape_spec({3, 40}, 5));
  cls->to(torch::kFloat64);
  wake_feedback(cls);
  const torch::Tensor x = torch::randn({4, 3, 40}, torch::kFloat64);
  expect_cell(cls, [&] { return cls->forward(x); },
              [&](const Cell& c) { return c.fc(c.hidden(x).select(1, -1)); }, 1e-11);
  // Ragged series: each sample's last valid step.
  const torch::Tensor lengths = torch::tensor({40, 17, 1, 33}, torch::kLong);
  expect_cell(cls, [&] { return cls->forward_ragged(x, lengths); },
              [&](const Cell& c) {
                const torch::Tensor h = c.hidden(x);
                std::vector<torch::Tensor> last;
                for (int64_t i = 0; i < 4; ++i) last.push_back(h[i][lengths[i].item<int64_t>() - 1]);
                return c.fc(torch::stack(last));
              },
              1e-11);
  // CTC: every frame's h.
  auto seq = make_model(ModelOptions{"lmu", 0.0, 8, 18}, speech_spec());
  seq->to(torch::kFloat64);
  wake_feedback(seq);
  const torch::Tensor f = torch::randn({2, 3, 60}, torch::kFloat64);
  torch::Tensor out_len;
  expect_cell(seq, [&] { return seq->forward_sequence(f, torch::tensor({60, 25}, torch::kLong), &out_len); },
              [&](const Cell& c) { return c.fc(c.hidden(f)); }, 1e-11);
  // A one-channel series [L].
  auto one = make_model(ModelOptions{"lmu", 0.0, 8, 18}, shape_spec({25}, 3));
  one->to(torch::kFloat64);
  wake_feedback(one);
  const torch::Tensor u = torch::randn({3, 25}, torch::kFloat64);
  expect_cell(one, [&] { return one->forward(u); }, [&](const Cell& c) { return c.fc(c.hidden(u).select(1, -1)); },
              1e-11);
}

// float32 over a long window: the folded matrices round differently from the cell's
// separate products, not worse (within 1e-4 of the largest value, forward and gradients).
TEST(LmuScan, Float32StaysWithinRoundingOfTheCellOverLongWindows) {
  torch::manual_seed(3);
  auto net = make_model(ModelOptions{"lmu", 0.0, 32, 18}, shape_spec({2, 300}, 4));
  wake_feedback(net);
  const torch::Tensor x = torch::randn({5, 2, 300});
  expect_cell(net, [&] { return net->forward(x); }, [&](const Cell& c) { return c.fc(c.hidden(x).select(1, -1)); },
              1e-4);
}

// Under autocast the fold's matrix products would run in bfloat16 and round W, which every
// step multiplies by: lmu_fold keeps autocast out (C and W bit-equal, float32).
TEST(LmuScan, AutocastDoesNotReachTheFold) {
  torch::manual_seed(4);
  const int64_t h = 16, o = 12;
  const LmuCell cell{0.3 * torch::randn({1, h}), 0.3 * torch::randn({1, o}), 0.2 * torch::randn({h, h}),
                     0.2 * torch::randn({h, o}), torch::eye(o) + 0.01 * torch::randn({o, o}), 0.1 * torch::randn({1, o})};
  const torch::Tensor ux = torch::randn({20, 3, 1}), hx = torch::randn({20, 3, h});
  const LmuFold plain = lmu_fold(cell, ux, hx);
  LmuFold under;
  {
    const AutocastGuard autocast(Amp::kBf16, torch::kCPU);
    ASSERT_EQ(cell.w_h.mm(cell.w_h).scalar_type(), torch::kBFloat16);  // autocast is on here
    under = lmu_fold(cell, ux.to(torch::kBFloat16), hx);
  }
  EXPECT_EQ(under.w.scalar_type(), torch::kFloat);
  EXPECT_EQ(under.c.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(under.w, plain.w));
  // The input terms arrive in bfloat16 from autocast's linear layers: only their rounding.
  EXPECT_TRUE(torch::equal(under.c, lmu_fold(cell, ux.to(torch::kBFloat16).to(torch::kFloat), hx).c));
}

TEST(LmuScan, RefusesWhatItCannotTake) {
  const torch::Tensor c = torch::randn({4, 2, 6}), w = torch::randn({6, 6});
  EXPECT_ERROR_CONTAINS(lmu_scan(c, torch::randn({5, 5}), 3), "expected C [L > 0, N, K] and W [K, K]");
  EXPECT_ERROR_CONTAINS(lmu_scan(torch::randn({0, 2, 6}), w, 3), "expected C [L > 0, N, K]");
  EXPECT_ERROR_CONTAINS(lmu_scan(c, w, 7), "hidden 7 not in 1..6");
  EXPECT_ERROR_CONTAINS(lmu_scan(c, w.to(torch::kFloat64), 3), "one dtype and device");
  // Its backward has no graph of its own: a second derivative is refused, not silently zero.
  const torch::Tensor cg = c.clone().requires_grad_();
  const torch::Tensor s = lmu_scan(cg, w, 3);
  try {
    torch::autograd::grad({s.sum()}, {cg}, {}, /*retain_graph=*/true, /*create_graph=*/true);
    ADD_FAILURE() << "a second derivative was not refused";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("no second derivative"), std::string::npos) << e.what();
  }
}
