// doctor's network report: NCCL's interface and transport choice by its rules, and the
// settings it flags.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>

#include "core/tools/network_report.hpp"
#include "test_helpers.hpp"

using namespace lockstep;
using lockstep::testing::has_line;

namespace {

NetworkFacts node() {
  NetworkFacts f;
  f.interfaces = {{"lo", "127.0.0.1"}, {"docker0", "172.17.0.1"}, {"eth0", "10.0.0.5"}, {"ib0", "192.168.1.5"}};
  f.hosts = 4;
  return f;
}

}  // namespace

TEST(NetworkReport, FollowsNcclsInterfaceOrder) {
  NetworkFacts f = node();
  EXPECT_TRUE(has_line(report_network(f).lines, "NCCL bootstrap interface: ib0 (192.168.1.5)"));
  EXPECT_TRUE(has_line(report_network(f).lines, "TCP sockets over ib0"));
  f.interfaces.pop_back();
  EXPECT_TRUE(has_line(report_network(f).lines, "NCCL bootstrap interface: eth0 (10.0.0.5)"));
  f.env["NCCL_SOCKET_IFNAME"] = "^eth,lo";
  EXPECT_TRUE(has_line(report_network(f).lines, "NCCL bootstrap interface: docker0"));
  f.env["NCCL_SOCKET_IFNAME"] = "=eth";
  EXPECT_TRUE(has_line(report_network(f).problems, "NCCL_SOCKET_IFNAME==eth matches no interface on this host"));
  f.env["NCCL_SOCKET_IFNAME"] = "eth";
  EXPECT_TRUE(report_network(f).problems.empty());
}

TEST(NetworkReport, InfinibandAndTheSettingsThatHurt) {
  NetworkFacts f = node();
  f.ib_devices = {"mlx5_0", "mlx5_1"};
  EXPECT_TRUE(has_line(report_network(f).lines, "InfiniBand/RoCE (mlx5_0, mlx5_1)"));
  f.env = {{"NCCL_IB_DISABLE", "1"}, {"NCCL_P2P_DISABLE", "1"}, {"NCCL_DEBUG", "TRACE"}, {"NCCL_ALGO", "Ring"},
           {"OMPI_MCA_btl", "^tcp"}};
  const NetworkReport r = report_network(f);
  EXPECT_TRUE(has_line(r.lines, "TCP sockets over"));
  EXPECT_TRUE(has_line(r.warnings, "NCCL_IB_DISABLE=1 with InfiniBand adapters present"));
  EXPECT_TRUE(has_line(r.warnings, "NCCL_P2P_DISABLE=1"));
  EXPECT_TRUE(has_line(r.warnings, "NCCL_DEBUG=TRACE"));
  EXPECT_TRUE(has_line(r.warnings, "NCCL_ALGO=Ring pins NCCL's choice"));
  EXPECT_TRUE(has_line(r.warnings, "OMPI_MCA_btl=^tcp leaves out Open MPI's TCP transport"));
  EXPECT_TRUE(has_line(r.lines, "NCCL_ALGO=Ring"));
}

TEST(NetworkReport, LoopbackOnlyIsAProblemAcrossHosts) {
  NetworkFacts f;
  f.interfaces = {{"lo", "127.0.0.1"}};
  f.hosts = 2;
  EXPECT_TRUE(has_line(report_network(f).problems, "only the loopback interface"));
  f.hosts = 1;
  EXPECT_TRUE(report_network(f).problems.empty());
  EXPECT_TRUE(has_line(report_network(f).lines, "settings: none (defaults)"));
}

// CPU gradients through Open MPI's TCP transport between exactly two hosts: the half-rate
// rendezvous case is flagged, with the eager-limit settings that cure it; not for NCCL
// jobs, more ranks, InfiniBand, UCX or a user who already set the limit.
TEST(NetworkReport, TwoRanksOverTcpAreToldAboutTheEagerLimit) {
  NetworkFacts f;
  f.interfaces = {{"lo", "127.0.0.1"}, {"eth0", "10.0.0.5"}};
  f.hosts = f.ranks = 2;
  f.mpi_gradients = true;
  EXPECT_TRUE(has_line(report_network(f).warnings, "OMPI_MCA_btl_tcp_eager_limit=4194304"));
  for (auto change : std::vector<std::function<void(NetworkFacts&)>>{
           [](NetworkFacts& g) { g.mpi_gradients = false; }, [](NetworkFacts& g) { g.ranks = 4; },
           [](NetworkFacts& g) { g.ib_devices = {"mlx5_0"}; }, [](NetworkFacts& g) { g.env["OMPI_MCA_pml"] = "ucx"; },
           [](NetworkFacts& g) { g.env["OMPI_MCA_btl_tcp_eager_limit"] = "1048576"; }}) {
    NetworkFacts g = f;
    change(g);
    EXPECT_FALSE(has_line(report_network(g).warnings, "eager_limit")) << "flagged where it does not apply";
  }
}

// A socket file with no listener: what munged leaves behind when it dies.
TEST(NetworkReport, DeadUnixSocketIsToldFromLiveOneAndFromOtherFiles) {
  const std::string dir = lockstep::testing::fresh_dir("munge_socket");
  const auto bound = [&](const std::string& path, bool listening) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0) << path;
    if (listening) EXPECT_EQ(::listen(fd, 1), 0);
    return fd;
  };
  const int dead = bound(dir + "/dead.sock", false);
  ::close(dead);  // the file stays, nobody listens
  const int live = bound(dir + "/live.sock", true);
  std::ofstream(dir + "/plain") << "x";
  EXPECT_TRUE(unix_socket_dead(dir + "/dead.sock"));
  EXPECT_FALSE(unix_socket_dead(dir + "/live.sock"));
  EXPECT_FALSE(unix_socket_dead(dir + "/plain"));
  EXPECT_FALSE(unix_socket_dead(dir + "/missing.sock"));
  ::close(live);
}

TEST(NetworkReport, DeadMungeDaemonIsNamed) {
  NetworkFacts f;
  f.interfaces = {{"lo", "127.0.0.1"}, {"eth0", "10.0.0.5"}};
  EXPECT_FALSE(has_line(report_network(f).warnings, "munge"));
  f.munge_socket_dead = true;
  const NetworkReport r = report_network(f);
  EXPECT_TRUE(has_line(r.warnings, "mpirun waits ~2.3 s"));
  EXPECT_TRUE(has_line(r.warnings, "PMIX_MCA_psec=^munge"));
  EXPECT_TRUE(r.problems.empty()) << "a slow start, not a failure";
}
