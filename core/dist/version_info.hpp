// version_info: what this lockstep is and what it runs on — lockstep's version and git
// commit, LibTorch, CUDA and NCCL (as built, and as found at run time), the MPI library
// and HDF5. `lockstep --version` and `lockstep doctor` print it; every run logs it and
// writes it into its "start" metrics row. Callable before MPI_Init (MPI-3 allows
// MPI_Get_library_version there) and on machines without a GPU.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace lockstep {

using VersionItems = std::vector<std::pair<std::string, std::string>>;  // (component, version)

VersionItems version_items();
// "0.2.0 (git abc1234567)": this build, as checkpoints, the pre-flight check and the start
// line record it; and the LibTorch it was built against.
std::string lockstep_version();
std::string torch_version();
// "lockstep 0.2.0 (abc1234567), LibTorch 2.11.0, CUDA 13.0 (runtime 13.0, driver none), ..."
std::string version_line();

}  // namespace lockstep
