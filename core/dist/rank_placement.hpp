// rank_placement: where each rank of a run sits — its host, its GPU (index, PCI bus id,
// NUMA node) and the CPUs it may run on (with their NUMA nodes) — gathered once at start so
// that rank 0's start-up lines show the whole job's placement, and `lockstep doctor` can
// flag a rank whose CPUs are on another NUMA node than its GPU (every host-to-device copy
// and kernel launch then crosses the socket interconnect).
//
// 1. probe_placement(): this rank's facts, from sched_getaffinity, CUDA_VISIBLE_DEVICES,
//    the CUDA runtime (cudaDeviceGetPCIBusId; GPU builds) and sysfs
//    (/sys/bus/pci/devices/BUS/numa_node, /sys/devices/system/node/nodeN/cpulist); a fact
//    that cannot be read is left unknown (-1, ""), never guessed;
// 2. gather_placements(): collective (an all-reduce of the record length, then a gather),
//    every rank's record to rank 0 (JSON over MpiRuntime::gather_bytes); the other ranks
//    get an empty list;
// 3. placement_lines() / numa_mismatch(): pure, tested with made-up records.
#pragma once

#include <string>
#include <vector>

namespace lockstep {

class MpiRuntime;

struct RankPlacement {
  int rank = 0;
  std::string host;
  int gpu = -1;               // the CUDA device index the rank uses; -1: CPU
  std::string visible;        // CUDA_VISIBLE_DEVICES as the rank saw it ("" unset)
  std::string gpu_bus;        // PCI bus id, e.g. 0000:18:00.0 ("" unknown)
  int gpu_numa = -1;          // the GPU's NUMA node (-1 unknown)
  std::vector<int> cpus;      // the CPUs the rank may run on
  std::vector<int> cpu_numa;  // the NUMA nodes of those CPUs (sorted, unique; empty unknown)
  int node = -1;              // MpiRuntime::nodes()' entry (set by gather_placements at rank 0)
};

// "0-3,8,10-11"; and back (a malformed list throws Error naming TEXT).
std::string cpu_list_text(const std::vector<int>& cpus);
std::vector<int> parse_cpu_list(const std::string& text);

// This rank's placement (GPU: the device index used, -1 on the CPU).
RankPlacement probe_placement(int rank, const std::string& host, int gpu);
// Collective: every rank's placement at rank 0 (in rank order), {} elsewhere.
std::vector<RankPlacement> gather_placements(const MpiRuntime& mpi, const RankPlacement& mine);

// One line per rank: "rank 0 on n1: GPU 0 (0000:18:00.0, NUMA 0; CUDA_VISIBLE_DEVICES=2),
// CPUs 0-7 (NUMA 0)".
std::vector<std::string> placement_lines(const std::vector<RankPlacement>& all);
// "" when the rank's CPUs share its GPU's NUMA node (or either is unknown), else what is
// wrong and the remedy in one line.
std::string numa_mismatch(const RankPlacement& p);
// Ranks of one host that share a GPU (NCCL refuses them; a CPU run may share).
std::string shared_gpu(const std::vector<RankPlacement>& all);

}  // namespace lockstep
