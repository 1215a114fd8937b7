// version_info: see version_info.hpp.
#include "core/dist/version_info.hpp"

#include <mpi.h>
#include <torch/version.h>

#include <fmt/format.h>

#include "core/base/version.hpp"
#include "io/util/h5.hpp"

#ifdef LOCKSTEP_HAVE_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

namespace lockstep {
namespace {

std::string mpi_library() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  if (MPI_Get_library_version(text, &len) != MPI_SUCCESS) return "unknown";
  std::string s(text, static_cast<size_t>(len));
  const auto comma = s.find(',');  // "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4"
  if (comma != std::string::npos) s.resize(comma);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

#ifdef LOCKSTEP_HAVE_NCCL
std::string cuda_version(int v) { return v > 0 ? fmt::format("{}.{}", v / 1000, (v % 1000) / 10) : "none"; }
#endif

}  // namespace

std::string lockstep_version() { return fmt::format("{} (git {})", LOCKSTEP_VERSION, LOCKSTEP_GIT_COMMIT); }
std::string torch_version() { return TORCH_VERSION; }

VersionItems version_items() {
  VersionItems v;
  v.emplace_back("lockstep", lockstep_version());
  v.emplace_back("LibTorch", torch_version());
#ifdef LOCKSTEP_HAVE_NCCL
  int runtime = 0, driver = 0, nccl = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  ncclGetVersion(&nccl);
  v.emplace_back("CUDA", fmt::format("{} built, runtime {}, driver {}", cuda_version(CUDART_VERSION), cuda_version(runtime),
                                     cuda_version(driver)));
  v.emplace_back("NCCL", fmt::format("{}.{}.{} built, {}.{}.{} runtime", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH,
                                     nccl / 10000, (nccl % 10000) / 100, nccl % 100));
#else
  v.emplace_back("CUDA", "not built in");
  v.emplace_back("NCCL", "not built in");
#endif
  v.emplace_back("MPI", mpi_library());
  v.emplace_back("HDF5", io::h5_version());
  return v;
}

std::string version_line() {
  std::string out;
  for (const auto& [name, version] : version_items()) out += (out.empty() ? "" : ", ") + name + " " + version;
  return out;
}

}  // namespace lockstep
