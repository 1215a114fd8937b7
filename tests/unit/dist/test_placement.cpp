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

// A hostile finding (helper-47): GPUs given to the job (CUDA_VISIBLE_DEVICES set) but none
// usable trained on the CPU with an info line only.
TEST(Placement, GpusGivenButNoneUsableIsSaid) {
  const std::string w = unusable_gpu_warning(Backend::kAuto, /*cuda_available=*/false, "0,1", "gpu-n3");
  EXPECT_NE(w.find("CUDA_VISIBLE_DEVICES=0,1"), std::string::npos) << w;
  EXPECT_NE(w.find("gpu-n3"), std::string::npos) << w;
  EXPECT_NE(w.find("--dist.backend mpi"), std::string::npos) << w;
  EXPECT_NE(unusable_gpu_warning(Backend::kAuto, false, "GPU-8f6e1c2a", "n"), "");
  EXPECT_EQ(unusable_gpu_warning(Backend::kAuto, false, nullptr, "n"), "") << "no GPU given";
  EXPECT_EQ(unusable_gpu_warning(Backend::kAuto, false, "", "n"), "");
  EXPECT_EQ(unusable_gpu_warning(Backend::kAuto, false, "NoDevFiles", "n"), "") << "Slurm: no GPU allocated";
  EXPECT_EQ(unusable_gpu_warning(Backend::kAuto, false, "-1", "n"), "") << "hidden on purpose";
  EXPECT_EQ(unusable_gpu_warning(Backend::kAuto, true, "0", "n"), "") << "usable";
  EXPECT_EQ(unusable_gpu_warning(Backend::kMpi, false, "0", "n"), "") << "the CPU is meant";
}
