// network_report: what `lockstep doctor` says about the network NCCL and MPI will use,
// from this host's facts — the NCCL_*, OMPI_* and UCX_* settings, the network interfaces
// and InfiniBand adapters — by NCCL's own selection rules (no communicator needed, so it
// works on a login node and in CI).
//
// 1. Transport: NCCL uses InfiniBand/RoCE (its IB transport) when adapters are present
//    (/sys/class/infiniband) and NCCL_IB_DISABLE is not 1; else TCP sockets.
// 2. Socket interface: NCCL_SOCKET_IFNAME when set (a list of prefixes; '^' excludes, '='
//    exact names), else NCCL's default order: ib* first, then any other interface except
//    docker* and lo, then docker*, then lo.
// 3. Flags (warnings or problems): a named interface that does not exist on this host,
//    only loopback on a multi-host job, NCCL_IB_DISABLE=1 with adapters present,
//    NCCL_P2P_DISABLE / NCCL_SHM_DISABLE (intra-node traffic through the network),
//    NCCL_DEBUG=TRACE or NCCL_DEBUG_SUBSYS (slow), NCCL_ALGO/NCCL_PROTO pinned (fine for
//    studies, not as defaults), Open MPI's TCP BTL excluded on a multi-host CPU job, 2 CPU
//    ranks on 2 hosts over TCP without eager limits, and a dead munge daemon behind a live
//    socket file (PMIx's munge plugin then retries it for ~2.3 s at every mpirun start).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace lockstep {

struct NetInterface {
  std::string name, address;  // IPv4 or IPv6 text
};

struct NetworkFacts {
  std::map<std::string, std::string> env;  // the NCCL_*, OMPI_*, UCX_* variables set
  std::vector<NetInterface> interfaces;    // up, with an address
  std::vector<std::string> ib_devices;     // /sys/class/infiniband entries
  int hosts = 1;                           // hosts in the job
  int ranks = 1;                           // ranks in the job
  bool mpi_gradients = false;              // gradients all-reduced by MPI (no GPUs: CPU training)
  bool munge_socket_dead = false;          // munge's socket file is there, nobody listens on it
};

// munge's default socket (Debian, RHEL): what PMIx's munge plugin connects to.
inline constexpr const char* kMungeSocket = "/run/munge/munge.socket.2";

// True when PATH is a socket file that refuses connections (its daemon is gone).
bool unix_socket_dead(const std::string& path);

struct NetworkReport {
  std::vector<std::string> lines;     // what it found
  std::vector<std::string> warnings;  // worth a look
  std::vector<std::string> problems;  // will fail or hang
};

// This host's facts (getifaddrs, /sys/class/infiniband, environ).
NetworkFacts gather_network_facts(int hosts);
NetworkReport report_network(const NetworkFacts& facts);

}  // namespace lockstep
