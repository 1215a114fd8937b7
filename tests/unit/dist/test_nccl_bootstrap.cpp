// core/dist/nccl_bootstrap: the GPU placement rule (one rank per GPU), decided from the
// ranks' GPU identities — pure, so it is tested without a GPU.
#include <gtest/gtest.h>

#include "core/dist/nccl_bootstrap.hpp"

using namespace lockstep;

TEST(GpuPlacement, TwoRanksOnOneGpuAreNamed) {
  EXPECT_EQ(shared_gpu_problem({"n1", "n1", "n2"}, {0, 0, 2}, {"0000:1b:00.0", "0000:1c:00.0", "0000:1b:00.0"},
                               {0, 1, 0}),
            "");
  const std::string p = shared_gpu_problem({"n1", "n1"}, {0, 0}, {"0000:1b:00.0", "0000:1b:00.0"}, {0, 0});
  EXPECT_NE(p.find("ranks 0 and 1 share GPU 0 (PCI 0000:1b:00.0) on host n1"), std::string::npos) << p;
}

// A hostile finding (helper-49): nodes of one host name (containers) have GPUs of the same
// PCI bus ids; keyed on the host name, a valid 2-node job was refused as sharing a GPU.
TEST(GpuPlacement, NodesOfOneHostNameDoNotShareTheirGpus) {
  EXPECT_EQ(shared_gpu_problem({"gpu", "gpu"}, {0, 1}, {"0000:1b:00.0", "0000:1b:00.0"}, {0, 0}), "");
}
