// skip_without_gpu: the first line of every GPU test. Skips ("skipped: no GPU") where torch
// sees no GPU (CI); elsewhere turns TF32 off in cuBLAS and cuDNN, so float32 results compare
// tightly with the CPU's.
#pragma once

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#define SKIP_WITHOUT_GPU()                                               \
  do {                                                                   \
    if (!torch::cuda::is_available()) GTEST_SKIP() << "skipped: no GPU"; \
    at::globalContext().setAllowTF32CuBLAS(false);                       \
    at::globalContext().setAllowTF32CuDNN(false);                        \
  } while (0)
