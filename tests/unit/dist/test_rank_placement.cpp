// Where each rank sits: CPU lists both ways, the start-up lines, the NUMA check that
// `lockstep doctor` and the trainer's start run, and GPUs shared on one host.
#include <gtest/gtest.h>

#include "core/base/error.hpp"
#include "core/dist/rank_placement.hpp"

using namespace lockstep;

TEST(RankPlacement, CpuListsReadAndWrittenAsLinuxDoes) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(cpu_list_text({11, 0, 1, 2, 3, 8, 10, 3}), "0-3,8,10-11");
  EXPECT_EQ(cpu_list_text({5}), "5");
  EXPECT_EQ(cpu_list_text({}), "");
  EXPECT_THROW(parse_cpu_list("3-1"), Error);
  EXPECT_THROW(parse_cpu_list("a,b"), Error);
}

TEST(RankPlacement, LinesNameHostGpuBusNumaAndCpus) {
  RankPlacement gpu;
  gpu.rank = 1;
  gpu.host = "n1";
  gpu.gpu = 0;
  gpu.visible = "3";
  gpu.gpu_bus = "0000:18:00.0";
  gpu.gpu_numa = 0;
  gpu.cpus = {0, 1, 2, 3};
  gpu.cpu_numa = {0};
  RankPlacement cpu;
  cpu.host = "n2";
  cpu.cpus = {4, 5};
  EXPECT_EQ(placement_lines({cpu, gpu}),
            (std::vector<std::string>{"rank 0 on n2: CPU, CPUs 4-5",
                                      "rank 1 on n1: GPU 0 (0000:18:00.0, NUMA 0; CUDA_VISIBLE_DEVICES=3), CPUs 0-3 (NUMA 0)"}));
}

TEST(RankPlacement, CpusOnAnotherNumaNodeThanTheGpuAreNamed) {
  RankPlacement p;
  p.rank = 3;
  p.host = "n2";
  p.gpu = 1;
  p.gpu_bus = "0000:af:00.0";
  p.gpu_numa = 1;
  p.cpus = {0, 1, 2, 3};
  p.cpu_numa = {0};
  EXPECT_EQ(numa_mismatch(p).substr(0, 98),
            "rank 3 on n2: GPU 1 (0000:af:00.0) is on NUMA node 1, but its CPUs 0-3 are on node(s) 0: bind each");
  p.cpu_numa = {0, 1};  // spread over both sockets: half its threads are far from the GPU
  EXPECT_NE(numa_mismatch(p), "");
  p.cpu_numa = {1};
  EXPECT_EQ(numa_mismatch(p), "");
  p.gpu_numa = -1;  // unknown (no sysfs): no verdict
  p.cpu_numa = {0};
  EXPECT_EQ(numa_mismatch(p), "");
  p.gpu = -1;  // a CPU rank
  p.gpu_numa = 1;
  EXPECT_EQ(numa_mismatch(p), "");
}

TEST(RankPlacement, TwoRanksOnOneGpuAreNamed) {
  RankPlacement a, b, c;
  a.rank = 0, b.rank = 1, c.rank = 2;
  a.host = b.host = "n1", c.host = "n2";
  a.gpu = b.gpu = c.gpu = 0;
  a.gpu_bus = b.gpu_bus = c.gpu_bus = "0000:18:00.0";
  EXPECT_EQ(shared_gpu({a, b, c}), "ranks 0, 1 share the GPU 0000:18:00.0 on n1");
  b.gpu_bus = "0000:3b:00.0";
  EXPECT_EQ(shared_gpu({a, b, c}), "");
}
