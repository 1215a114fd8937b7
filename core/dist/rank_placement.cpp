// rank_placement: see rank_placement.hpp.
#include "core/dist/rank_placement.hpp"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <tuple>
#include <set>

#include "core/base/env.hpp"
#include "core/base/error.hpp"
#include "core/dist/mpi_runtime.hpp"
#include "io/util/file_util.hpp"
#include "io/util/json_io.hpp"

#ifdef LOCKSTEP_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace lockstep {
namespace {

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// cpu -> NUMA node, from sysfs: every nodeN directory there (node numbers may have gaps);
// empty where there is none.
std::map<int, int> cpu_nodes() {
  std::map<int, int> out;
  const std::string root = "/sys/devices/system/node";
  if (!io::is_directory(root)) return out;
  for (const std::string& name : io::list_dir(root)) {
    if (name.size() < 5 || name.compare(0, 4, "node") != 0 || name.find_first_not_of("0123456789", 4) != std::string::npos)
      continue;
    try {
      for (int c : parse_cpu_list(read_line(root + "/" + name + "/cpulist"))) out[c] = std::stoi(name.substr(4));
    } catch (const Error&) {  // an unreadable list: that node's CPUs stay unknown
    }
  }
  return out;
}

}  // namespace

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::vector<int> v = cpus;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + (j == i ? std::to_string(v[i]) : fmt::format("{}-{}", v[i], v[j]));
    i = j + 1;
  }
  return out;
}

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string part = text.substr(at, comma - at);
    const size_t dash = part.find('-');
    auto num = [&](const std::string& s) {
      if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos)
        throw Error("'" + text + "' is not a CPU list (like 0-3,8)");
      return std::stoi(s);
    };
    const int a = num(dash == std::string::npos ? part : part.substr(0, dash));
    const int b = dash == std::string::npos ? a : num(part.substr(dash + 1));
    if (b < a) throw Error("'" + text + "' is not a CPU list (like 0-3,8)");
    for (int c = a; c <= b; ++c) out.push_back(c);
    at = comma + 1;
  }
  return out;
}

RankPlacement probe_placement(int rank, const std::string& host, int gpu) {
  RankPlacement p;
  p.rank = rank;
  p.host = host;
  p.gpu = gpu;
  if (const char* v = env::get(env::kCudaVisibleDevices)) p.visible = v;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) p.cpus.push_back(c);
  const std::map<int, int> nodes = cpu_nodes();
  std::set<int> numa;
  for (int c : p.cpus)
    if (const auto it = nodes.find(c); it != nodes.end()) numa.insert(it->second);
  if (!nodes.empty()) p.cpu_numa.assign(numa.begin(), numa.end());
#ifdef LOCKSTEP_HAVE_CUDA
  char bus[32] = {0};
  if (gpu >= 0 && cudaDeviceGetPCIBusId(bus, sizeof bus, gpu) == cudaSuccess) {
    p.gpu_bus = bus;
    const std::string node = read_line("/sys/bus/pci/devices/" + lower(p.gpu_bus) + "/numa_node");
    if (!node.empty() && node.find_first_not_of("-0123456789") == std::string::npos) p.gpu_numa = std::stoi(node);
  }
#endif
  return p;
}

std::vector<RankPlacement> gather_placements(const MpiRuntime& mpi, const RankPlacement& mine) {
  const io::Json j = {{"rank", mine.rank},       {"host", mine.host},       {"gpu", mine.gpu},
                      {"visible", mine.visible}, {"gpu_bus", mine.gpu_bus}, {"gpu_numa", mine.gpu_numa},
                      {"cpus", mine.cpus},       {"cpu_numa", mine.cpu_numa}};
  std::string text = io::dump_json(j);
  // MPI_Gather takes equal parts: every record padded to the longest (a few hundred bytes
  // on most nodes; a long CPU list makes it longer, for every rank alike).
  double width = static_cast<double>(text.size());
  mpi.allreduce_max(&width, 1);
  const size_t w = static_cast<size_t>(width);
  text.resize(w, ' ');
  const std::vector<uint8_t> all = mpi.gather_bytes(std::vector<uint8_t>(text.begin(), text.end()), 0);
  std::vector<RankPlacement> out;
  if (mpi.rank() != 0) return out;
  for (size_t at = 0; at + w <= all.size(); at += w) {
    const std::string what = "rank placement record";
    const io::Json r = io::parse_json(std::string(all.begin() + static_cast<long>(at),
                                                  all.begin() + static_cast<long>(at + w)), what);
    RankPlacement p;
    p.rank = io::json_get<int>(r, "rank", what);
    p.host = io::json_get<std::string>(r, "host", what);
    p.gpu = io::json_get<int>(r, "gpu", what);
    p.visible = io::json_get<std::string>(r, "visible", what);
    p.gpu_bus = io::json_get<std::string>(r, "gpu_bus", what);
    p.gpu_numa = io::json_get<int>(r, "gpu_numa", what);
    p.cpus = io::json_get<std::vector<int>>(r, "cpus", what);
    p.cpu_numa = io::json_get<std::vector<int>>(r, "cpu_numa", what);
    p.node = p.rank >= 0 && p.rank < static_cast<int>(mpi.nodes().size()) ? mpi.nodes()[static_cast<size_t>(p.rank)] : -1;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<std::string> placement_lines(const std::vector<RankPlacement>& all) {
  std::vector<std::string> out;
  for (const auto& p : all) {
    std::string gpu = "CPU";
    if (p.gpu >= 0) {
      std::string detail = p.gpu_bus.empty() ? "" : p.gpu_bus;
      if (p.gpu_numa >= 0) detail += (detail.empty() ? "" : ", ") + fmt::format("NUMA {}", p.gpu_numa);
      if (!p.visible.empty()) detail += (detail.empty() ? "" : "; ") + ("CUDA_VISIBLE_DEVICES=" + p.visible);
      gpu = fmt::format("GPU {}{}", p.gpu, detail.empty() ? "" : " (" + detail + ")");
    } else if (!p.visible.empty()) {
      gpu += " (CUDA_VISIBLE_DEVICES=" + p.visible + ")";
    }
    std::string numa;
    for (int n : p.cpu_numa) numa += (numa.empty() ? "" : ",") + std::to_string(n);
    out.push_back(fmt::format("rank {} on {}: {}, CPUs {}{}", p.rank, p.host, gpu,
                              p.cpus.empty() ? std::string("?") : cpu_list_text(p.cpus),
                              numa.empty() ? "" : " (NUMA " + numa + ")"));
  }
  return out;
}

std::string numa_mismatch(const RankPlacement& p) {
  if (p.gpu < 0 || p.gpu_numa < 0 || p.cpu_numa.empty()) return "";
  if (std::find(p.cpu_numa.begin(), p.cpu_numa.end(), p.gpu_numa) != p.cpu_numa.end() && p.cpu_numa.size() == 1)
    return "";
  std::string nodes;
  for (int n : p.cpu_numa) nodes += (nodes.empty() ? "" : ",") + std::to_string(n);
  return fmt::format("rank {} on {}: GPU {} ({}) is on NUMA node {}, but its CPUs {} are on node(s) {}: bind each rank "
                     "to the cores of its GPU's node (srun --gpu-bind=single:1 --cpu-bind=cores, or mpirun --map-by "
                     "ppr:G:node:PE=C --bind-to core; README \"GPU placement\")",
                     p.rank, p.host, p.gpu, p.gpu_bus, p.gpu_numa, cpu_list_text(p.cpus), nodes);
}

std::string shared_gpu(const std::vector<RankPlacement>& all) {
  // (node, host, bus) -> its ranks: one host name can stand for several nodes (containers).
  std::map<std::tuple<int, std::string, std::string>, std::vector<int>> by;
  for (const auto& p : all)
    if (p.gpu >= 0 && !p.gpu_bus.empty()) by[{p.node, p.host, p.gpu_bus}].push_back(p.rank);
  for (const auto& [key, ranks] : by)
    if (ranks.size() > 1) {
      std::string r;
      for (int x : ranks) r += (r.empty() ? "" : ", ") + std::to_string(x);
      return fmt::format("ranks {} share the GPU {} on {}", r, std::get<2>(key), std::get<1>(key));
    }
  return "";
}

}  // namespace lockstep
