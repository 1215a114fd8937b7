// core/dist/placement: the warning of a CPU-only build on a GPU node (issue 32) — when it
// is said and what it names. The GPU and NCCL paths of place_run need a GPU (tests/gpu).
#include <gtest/gtest.h>

#include "core/dist/placement.hpp"

using namespace lockstep;

TEST(CpuBuildWarning, SaidOnlyForABuildWithoutNcclOnAGpuNodeUnderAuto) {
  const std::string w = cpu_build_warning(Backend::kAuto, 4, /*nccl_built=*/false, "gpu-n17");
  EXPECT_NE(w.find("built without CUDA/NCCL"), std::string::npos) << w;
  EXPECT_NE(w.find("4 GPU(s) are visible on gpu-n17"), std::string::npos) << w;
  EXPECT_NE(w.find("--dist.backend mpi"), std::string::npos) << w;
  EXPECT_EQ(cpu_build_warning(Backend::kAuto, 0, false, "cpu-n1"), "") << "no GPU: nothing to say";
  EXPECT_EQ(cpu_build_warning(Backend::kAuto, 4, /*nccl_built=*/true, "gpu-n17"), "") << "this build uses them";
  EXPECT_EQ(cpu_build_warning(Backend::kMpi, 4, false, "gpu-n17"), "") << "the CPU is meant";
}
