// half_sum: 16-bit sums widened to float32 and rounded once (round to nearest even).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/dist/half_sum.hpp"

using namespace lockstep;

TEST(HalfSum, ConversionsRoundToNearestEven) {
  EXPECT_EQ(from_bf16(to_bf16(1.0f)), 1.0f);
  EXPECT_EQ(from_f16(to_f16(-2.5f)), -2.5f);
  // bf16 keeps 8 significant bits: 1 + 2^-8 is a tie between 1 and 1 + 2^-7, even wins.
  EXPECT_EQ(from_bf16(to_bf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
  // fp16 keeps 11: 1 + 2^-11 ties to 1.
  EXPECT_EQ(from_f16(to_f16(1.0f + std::ldexp(1.0f, -11))), 1.0f);
  // Ranges: bf16 has float32's exponent, fp16 overflows above 65504.
  EXPECT_TRUE(std::isfinite(from_bf16(to_bf16(1e30f))));
  EXPECT_EQ(from_f16(to_f16(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(from_f16(to_f16(1e5f))));
  EXPECT_TRUE(std::isnan(from_bf16(to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(HalfSum, SumsInFloat32AndRoundsOnce) {
  // 256 + 1.5 in bf16: exact float32 sum 257.5 rounds to 258 (bf16 spacing at 256 is 2);
  // 16-bit arithmetic done twice (256+1 -> 256, then +0.5 -> 256) would lose it.
  std::vector<uint16_t> a{to_bf16(256.0f), to_bf16(-1.0f), to_bf16(3.0f)}, b{to_bf16(1.5f), to_bf16(1.0f), to_bf16(0.25f)};
  sum_bf16(a.data(), b.data(), b.size());
  EXPECT_EQ(from_bf16(b[0]), 258.0f);
  EXPECT_EQ(from_bf16(b[1]), 0.0f);
  EXPECT_EQ(from_bf16(b[2]), 3.25f);
  std::vector<uint16_t> c{to_f16(0.1f), to_f16(60000.0f)}, d{to_f16(0.2f), to_f16(10000.0f)};
  sum_f16(c.data(), d.data(), d.size());
  EXPECT_NEAR(from_f16(d[0]), 0.3f, 0.3f * std::ldexp(1.0f, -10));
  EXPECT_TRUE(std::isinf(from_f16(d[1])));  // 70000 > 65504: the overflow a loss scaler must see
}

TEST(HalfSum, RoundTripErrorIsBoundedByTheFormat) {
  // A gradient-like vector through compress -> sum of two ranks -> decompress stays within
  // the format's relative precision of the float32 sum.
  std::vector<float> x(1000), y(1000);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = std::sin(static_cast<float>(i)) * std::ldexp(1.0f, static_cast<int>(i % 20) - 15);
    y[i] = std::cos(static_cast<float>(i) * 0.7f) * std::ldexp(1.0f, static_cast<int>(i % 20) - 15);
  }
  for (const bool bf : {true, false}) {
    std::vector<uint16_t> a(x.size()), b(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      a[i] = bf ? to_bf16(x[i]) : to_f16(x[i]);
      b[i] = bf ? to_bf16(y[i]) : to_f16(y[i]);
    }
    bf ? sum_bf16(a.data(), b.data(), b.size()) : sum_f16(a.data(), b.data(), b.size());
    const float eps = bf ? std::ldexp(1.0f, -8) : std::ldexp(1.0f, -11);
    for (size_t i = 0; i < x.size(); ++i) {
      const float exact = x[i] + y[i], got = bf ? from_bf16(b[i]) : from_f16(b[i]);
      // three roundings (two inputs, one sum); fp16's subnormals add an absolute 2^-24
      const float bound = 3 * eps * (std::fabs(x[i]) + std::fabs(y[i])) + (bf ? 0.0f : std::ldexp(1.0f, -23));
      ASSERT_LE(std::fabs(got - exact), bound) << (bf ? "bf16 " : "fp16 ") << i;
    }
  }
}
