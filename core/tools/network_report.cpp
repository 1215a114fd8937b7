// network_report: see network_report.hpp.
#include "core/tools/network_report.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <set>

#include "io/import/text_fields.hpp"
#include "io/util/file_util.hpp"

extern char** environ;

namespace lockstep {
namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

// NCCL_SOCKET_IFNAME semantics: "^a,b" excludes, "=a" exact, else prefixes.
bool matches(const std::string& spec, const std::string& name) {
  std::string list = spec;
  bool exclude = false, exact = false;
  if (!list.empty() && list[0] == '^') exclude = true, list.erase(0, 1);
  if (!list.empty() && list[0] == '=') exact = true, list.erase(0, 1);
  bool hit = false;
  for (const auto& item : io::split_fields(list, ','))
    if (!item.empty()) hit = hit || (exact ? name == item : starts_with(name, item));
  return exclude ? !hit : hit;
}

std::string env_or(const NetworkFacts& f, const std::string& key, const std::string& fallback = "") {
  const auto it = f.env.find(key);
  return it == f.env.end() ? fallback : it->second;
}

}  // namespace

bool unix_socket_dead(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool refused = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 && errno == ECONNREFUSED;
  ::close(fd);
  return refused;
}

NetworkFacts gather_network_facts(int hosts) {
  NetworkFacts f;
  f.hosts = hosts;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = kv.substr(0, eq);
    // Open MPI's launcher sets OMPI_* per rank (ranks, URIs, session dirs): only the MCA
    // parameters a user sets are settings.
    bool launcher = starts_with(key, "OMPI_") && !starts_with(key, "OMPI_MCA_");
    for (const char* p : {"OMPI_MCA_orte_", "OMPI_MCA_ess", "OMPI_MCA_pmix", "OMPI_MCA_shmem_", "OMPI_MCA_initial_wdir",
                          "OMPI_MCA_mpi_oversubscribe"})
      launcher = launcher || starts_with(key, p);
    if ((starts_with(key, "NCCL_") || starts_with(key, "OMPI_") || starts_with(key, "UCX_")) && !launcher)
      f.env[key] = kv.substr(eq + 1);
  }
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    std::set<std::string> seen;
    for (ifaddrs* a = list; a; a = a->ifa_next) {
      if (!a->ifa_addr || !(a->ifa_flags & IFF_UP)) continue;
      const int family = a->ifa_addr->sa_family;
      if (family != AF_INET && family != AF_INET6) continue;
      char text[INET6_ADDRSTRLEN] = {0};
      const void* addr = family == AF_INET ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr)
                                           : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr);
      inet_ntop(family, addr, text, sizeof text);
      if (family == AF_INET6 && seen.count(a->ifa_name)) continue;  // one address a name, IPv4 first
      if (family == AF_INET) seen.insert(a->ifa_name);
      f.interfaces.push_back({a->ifa_name, text});
    }
    freeifaddrs(list);
  }
  // IPv4 entries first, then the IPv6-only ones; one per interface.
  std::stable_sort(f.interfaces.begin(), f.interfaces.end(), [](const NetInterface& a, const NetInterface& b) {
    return (a.address.find(':') == std::string::npos) > (b.address.find(':') == std::string::npos);
  });
  std::vector<NetInterface> unique;
  for (const auto& i : f.interfaces)
    if (std::none_of(unique.begin(), unique.end(), [&](const NetInterface& u) { return u.name == i.name; }))
      unique.push_back(i);
  f.interfaces = unique;
  if (io::is_directory("/sys/class/infiniband")) f.ib_devices = io::list_dir("/sys/class/infiniband");
  f.munge_socket_dead = unix_socket_dead(kMungeSocket);
  return f;
}

NetworkReport report_network(const NetworkFacts& f) {
  NetworkReport r;
  // Which interfaces NCCL's socket code (bootstrap, and the transport without IB) takes.
  std::vector<const NetInterface*> chosen;
  const std::string ifname = env_or(f, "NCCL_SOCKET_IFNAME");
  if (!ifname.empty()) {
    for (const auto& i : f.interfaces)
      if (matches(ifname, i.name)) chosen.push_back(&i);
    if (chosen.empty())
      r.problems.push_back("NCCL_SOCKET_IFNAME=" + ifname + " matches no interface on this host (NCCL fails at init)");
  } else {
    const auto pass = [&](auto pred) {
      for (const auto& i : f.interfaces)
        if (pred(i.name)) chosen.push_back(&i);
    };
    pass([](const std::string& n) { return starts_with(n, "ib"); });
    if (chosen.empty()) pass([](const std::string& n) { return !starts_with(n, "docker") && n != "lo"; });
    if (chosen.empty()) pass([](const std::string& n) { return starts_with(n, "docker"); });
    if (chosen.empty()) pass([](const std::string& n) { return n == "lo"; });
  }
  std::string socket_ifs;
  for (const auto* i : chosen) socket_ifs += (socket_ifs.empty() ? "" : ", ") + i->name + " (" + i->address + ")";
  const bool ib_off = env_or(f, "NCCL_IB_DISABLE") == "1";
  const bool ib = !f.ib_devices.empty() && !ib_off;
  std::string devices;
  for (const auto& d : f.ib_devices) devices += (devices.empty() ? "" : ", ") + d;
  r.lines.push_back("NCCL transport between nodes (by NCCL's rules): " +
                    (ib ? "InfiniBand/RoCE (" + devices + (env_or(f, "NCCL_IB_HCA").empty() ? "" : ", NCCL_IB_HCA=" + env_or(f, "NCCL_IB_HCA")) + ")"
                        : "TCP sockets over " + (socket_ifs.empty() ? std::string("no interface") : socket_ifs)));
  r.lines.push_back("NCCL bootstrap interface: " + (chosen.empty() ? std::string("none") : chosen.front()->name + " (" +
                                                                                            chosen.front()->address + ")"));
  if (f.env.empty()) {
    r.lines.push_back("NCCL_*/OMPI_*/UCX_* settings: none (defaults)");
  } else {
    std::string all;
    for (const auto& [k, v] : f.env) all += (all.empty() ? "" : " ") + k + "=" + v;
    r.lines.push_back("NCCL_*/OMPI_*/UCX_* settings: " + all);
  }
  if (f.hosts > 1 && !chosen.empty() && std::all_of(chosen.begin(), chosen.end(), [](auto* i) { return i->name == "lo"; }))
    r.problems.push_back("only the loopback interface for NCCL's sockets on a " + std::to_string(f.hosts) +
                         "-host job: other hosts cannot connect (set NCCL_SOCKET_IFNAME)");
  if (ib_off && !f.ib_devices.empty())
    r.warnings.push_back("NCCL_IB_DISABLE=1 with InfiniBand adapters present (" + devices +
                         "): NCCL falls back to TCP sockets, several times slower");
  for (const char* k : {"NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE"})
    if (env_or(f, k) == "1")
      r.warnings.push_back(std::string(k) + "=1: GPUs of one node talk through " +
                           (std::string(k) == "NCCL_P2P_DISABLE" ? "host memory or the network instead of NVLink/PCIe"
                                                                 : "the network instead of shared memory"));
  if (env_or(f, "NCCL_DEBUG") == "TRACE" || !env_or(f, "NCCL_DEBUG_SUBSYS").empty())
    r.warnings.push_back("NCCL_DEBUG=TRACE / NCCL_DEBUG_SUBSYS: verbose NCCL logging slows every collective (use WARN, "
                         "or INFO once to see NCCL's choices)");
  for (const char* k : {"NCCL_ALGO", "NCCL_PROTO"})
    if (!env_or(f, k).empty())
      r.warnings.push_back(std::string(k) + "=" + env_or(f, k) +
                           " pins NCCL's choice: right for a scaling study, often slower as a default");
  const std::string btl = env_or(f, "OMPI_MCA_btl");
  if (f.hosts > 1 && !btl.empty() &&
      ((btl[0] == '^' && matches(btl, "tcp") == false) || (btl[0] != '^' && btl.find("tcp") == std::string::npos)) &&
      env_or(f, "OMPI_MCA_pml").find("ucx") == std::string::npos)
    r.warnings.push_back("OMPI_MCA_btl=" + btl + " leaves out Open MPI's TCP transport on a multi-host job without UCX: "
                         "ranks on different hosts may not reach each other");
  // Two ranks on two hosts over TCP: each all-reduce sends both ways through one TCP
  // connection, and Open MPI's rendezvous for messages above the TCP eager limit (64 KiB)
  // waits for handshakes queued behind the other direction's data: large all-reduces ran
  // at half the link rate on shaped links (docs/scaling.md). Eager messages avoid it.
  if (f.mpi_gradients && f.ranks == 2 && f.hosts == 2 && f.ib_devices.empty() &&
      env_or(f, "OMPI_MCA_pml").find("ucx") == std::string::npos && env_or(f, "OMPI_MCA_btl_tcp_eager_limit").empty())
    r.warnings.push_back("2 ranks on 2 hosts over Open MPI's TCP transport: gradient all-reduces above 64 KiB run at "
                         "about half the link rate (rendezvous handshakes wait behind the other direction's data; "
                         "docs/scaling.md); OMPI_MCA_btl_tcp_eager_limit=4194304 and "
                         "OMPI_MCA_btl_tcp_rndv_eager_limit=4194304 restore it for buckets up to 8 MiB");
  // A host with munge installed whose daemon died (or was never restarted after a test
  // cluster stopped) keeps the socket file; PMIx's munge security plugin in mpirun then
  // retries it with back-off on every start: 2.3 s measured here, before any rank runs.
  // (Whether mpirun had PMIX_MCA_psec=^munge cannot be seen from a rank: MPI_Init sets
  // PMIX_MCA_psec=native in every rank's environment.)
  if (f.munge_socket_dead)
    r.warnings.push_back(std::string("munge's socket ") + kMungeSocket +
                         " refuses connections (munged is not running): mpirun waits ~2.3 s in PMIx's munge "
                         "security plugin at every start; start munged (Slurm needs it) or launch with "
                         "PMIX_MCA_psec=^munge (a rank cannot see whether its mpirun had it: if so, this costs nothing)");
  return r;
}

}  // namespace lockstep
