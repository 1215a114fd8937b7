// core/train/mfu: a window's MFU is its model FLOPs over its seconds and the GPU's peak; no
// figure without FLOPs, a peak or time; a CPU run is watched as a CPU (nothing counted).
#include <gtest/gtest.h>

#include "core/model/registry.hpp"
#include "core/train/mfu.hpp"
#include "test_helpers.hpp"

using namespace lockstep;

TEST(Mfu, IsTheWindowsModelFlopsOverItsSecondsAndThePeak) {
  GpuWatch w;
  w.device = torch::Device(torch::kCUDA, 0);
  w.step_flops = 2e12;   // one rank's optimizer step
  w.peak_flops = 1e15;   // 1 PFLOP/s
  EXPECT_DOUBLE_EQ(*mfu_pct(w, 10, 4.0), 0.5);  // 2e13 FLOP in 4 s = 5e12 FLOP/s = 0.5% of 1e15
  EXPECT_FALSE(mfu_pct(w, 10, 0.0)) << "no time, no figure";
  GpuWatch no_peak = w;
  no_peak.peak_flops.reset();
  EXPECT_FALSE(mfu_pct(no_peak, 10, 4.0));
  GpuWatch nothing = w;
  nothing.step_flops = 0;
  EXPECT_FALSE(mfu_pct(nothing, 10, 4.0));
}

TEST(Mfu, ACpuRunCountsNothing) {
  Config cfg;
  const io::DatasetSpec spec = lockstep::testing::shape_spec({1, 28, 28}, 10);
  auto model = make_model(ModelOptions{"cnn", 0.0}, spec);
  const GpuWatch w = watch_gpu(*model, spec, torch::kCPU, cfg);
  EXPECT_TRUE(w.device.is_cpu());
  EXPECT_EQ(w.step_flops, 0.0);
  EXPECT_FALSE(w.peak_flops);
}
