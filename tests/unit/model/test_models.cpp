// The built-in models: output shapes from the dataset's metadata, and usage errors for
// data a model cannot take.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "core/base/error.hpp"
#include "core/model/registry.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using lockstep::testing::shape_spec;

namespace {

std::vector<int64_t> batch_of(int64_t n, const std::vector<int64_t>& shape) {
  std::vector<int64_t> out{n};
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

}  // namespace

TEST(Models, EveryBuiltInMapsSamplesToClassLogits) {
  struct Case {
    const char* name;
    std::vector<int64_t> shape;
  };
  for (const Case& c : {Case{"cnn", {1, 28, 28}}, Case{"cnn", {3, 32, 32}}, Case{"resnet", {1, 28, 28}},
                        Case{"resnet", {3, 96, 96}}, Case{"mlp", {561}}, Case{"mlp", {9, 128}},
                        Case{"cnn1d", {9, 128}}, Case{"cnn1d", {64}}, Case{"lmu", {6, 100}}, Case{"lmu", {25}}}) {
    auto m = make_model(ModelOptions{c.name, 0.1, 8, 18}, shape_spec(c.shape, 6));
    m->train();
    const auto out = m->forward(torch::randn(batch_of(3, c.shape)));
    EXPECT_EQ(out.sizes(), (std::vector<int64_t>{3, 6})) << c.name << " " << c.shape.size();
    out.sum().backward();  // every parameter takes part
    for (const auto& p : m->named_parameters())
      EXPECT_TRUE(p.value().grad().defined()) << c.name << " " << p.key();
  }
}

// The LMU's memory holds Legendre coefficients of the last L inputs: a constant input
// converges to the constant's coefficients (1, 0, 0, ...), i.e. (I - Abar) m = Bbar has
// that solution, for the zero-order-hold discretisation of the delay system.
TEST(Models, LmuMemoryIsALegendreDelayLine) {
  auto m = make_model(ModelOptions{"lmu", 0.0, 8, 18}, shape_spec({3, 40}, 5));
  torch::Tensor abar_t, bbar;
  for (const auto& b : m->named_buffers()) {
    if (b.key() == "abar_t") abar_t = b.value();
    if (b.key() == "bbar") bbar = b.value();
  }
  ASSERT_TRUE(abar_t.defined() && bbar.defined());
  EXPECT_EQ(abar_t.sizes(), (std::vector<int64_t>{40, 40}));  // order min(64, L)
  const auto a = abar_t.t().to(torch::kFloat64);
  const auto steady = torch::linalg_solve(torch::eye(40, torch::kFloat64) - a, bbar[0].to(torch::kFloat64), true);
  EXPECT_NEAR(steady[0].item<double>(), 1.0, 1e-4);
  EXPECT_LT(steady.slice(0, 1).abs().max().item<double>(), 1e-4);
  // A 2-step window's order is 2; longer windows cap at 64.
  auto small = make_model(ModelOptions{"lmu", 0.0, 8, 18}, shape_spec({2}, 3));
  auto big = make_model(ModelOptions{"lmu", 0.0, 8, 18}, shape_spec({1, 500}, 3));
  for (const auto& b : small->named_buffers())
    if (b.key() == "abar_t") EXPECT_EQ(b.value().size(0), 2);
  for (const auto& b : big->named_buffers())
    if (b.key() == "abar_t") EXPECT_EQ(b.value().size(0), 64);
}

TEST(Models, WidthAndDepthScaleTheResNet) {
  const auto s = shape_spec({3, 32, 32}, 10);
  auto r18 = make_model(ModelOptions{"resnet", 0.0, 8, 18}, s);
  auto r34 = make_model(ModelOptions{"resnet", 0.0, 8, 34}, s);
  auto wide = make_model(ModelOptions{"resnet", 0.0, 16, 18}, s);
  EXPECT_GT(r34->parameter_count(), r18->parameter_count());
  EXPECT_GT(wide->parameter_count(), 3 * r18->parameter_count());
  // ResNet-18 at the standard width 64: 11.2 M parameters with a 10-class head.
  auto standard = make_model(ModelOptions{"resnet", 0.0, 0, 18}, s);
  EXPECT_NEAR(static_cast<double>(standard->parameter_count()), 11.17e6, 0.05e6);
}

TEST(Models, DataAModelCannotTakeIsAUsageError) {
  EXPECT_THROW(make_model(ModelOptions{"resnet", 0.0, 8, 18}, shape_spec({561}, 6)), UsageError);
  EXPECT_THROW(make_model(ModelOptions{"resnet", 0.0, 8, 50}, shape_spec({3, 32, 32}, 6)), UsageError);
  EXPECT_THROW(make_model(ModelOptions{"cnn1d", 0.0, 8, 18}, shape_spec({3, 32, 32}, 6)), UsageError);
  EXPECT_THROW(make_model(ModelOptions{"torchscript:/nonexistent/m.pt", 0.0}, shape_spec({4}, 2)), UsageError);
  try {
    make_model(ModelOptions{"vit", 0.0}, shape_spec({4}, 2));
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown model 'vit'"), std::string::npos);
  }
}
