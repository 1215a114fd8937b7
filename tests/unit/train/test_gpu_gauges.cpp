// core/train/gpu_gauges: NVML is loaded at run time, so a machine without it (CI, CPU nodes)
// gets "not measured" with the reason, never an error; a CPU run reads no gauges at all.
// (Readings on a GPU: gpu_tests.)
#include <gtest/gtest.h>

#include <dlfcn.h>

#include "core/train/gpu_gauges.hpp"

using namespace lockstep;

TEST(GpuGauges, ACpuRunReadsNothing) {
  const GpuGauges g(torch::kCPU);
  EXPECT_FALSE(g.available());
  EXPECT_EQ(g.why_not(), "not a GPU run");
  const GpuReading r = g.read();
  EXPECT_FALSE(r.util_pct || r.mem_gib || r.power_w);
}

TEST(GpuGauges, WithoutNvmlEveryGaugeIsNotMeasuredAndSaysWhy) {
  if (void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(lib);
    GTEST_SKIP() << "this machine has NVML (gpu_tests reads it)";
  }
  const GpuGauges g(torch::Device(torch::kCUDA, 0));
  EXPECT_FALSE(g.available());
  EXPECT_NE(g.why_not().find("NVML not loaded"), std::string::npos) << g.why_not();
  const GpuReading r = g.read();
  EXPECT_FALSE(r.util_pct || r.mem_gib || r.power_w);
}
