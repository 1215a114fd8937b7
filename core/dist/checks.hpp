// checks: one check helper per library (STYLE rule 2), all the same shape and all ending
// in check_failed(), which throws lockstep::Error with the call, the library's own error
// string and file:line. Rank and host are added once, by the logger, when main() reports
// the error. (HDF5's H5_CHECK lives in io/util/h5.hpp: io sits below this layer.)
//   MPI_CHECK(MPI_Allreduce(...));   needs <mpi.h>; our communicator returns errors
//   NCCL_CHECK(ncclAllReduce(...));  needs <nccl.h>
//   CUDA_CHECK(cudaEventRecord(...)); needs <cuda_runtime_api.h>
#pragma once

#include <string>

namespace lockstep {

// What a user does next after an NCCL error (appended to its message).
inline constexpr const char* kNcclNext =
    " — next: lockstep doctor under the same launcher (the interface and transport NCCL uses, one rank per GPU), "
    "NCCL_DEBUG=INFO, docs/troubleshooting.md \"NCCL errors\"";

[[noreturn]] void check_failed(const char* library, const char* call, const std::string& error, const char* file,
                               int line);
// MPI's text for an error code (MPI_Error_string).
std::string mpi_error_text(int rc);

}  // namespace lockstep

#define MPI_CHECK(call)                                                                                \
  do {                                                                                                 \
    const int mpi_rc_ = (call);                                                                        \
    if (mpi_rc_ != MPI_SUCCESS)                                                                        \
      ::lockstep::check_failed("MPI", #call, ::lockstep::mpi_error_text(mpi_rc_), __FILE__, __LINE__); \
  } while (0)

#define NCCL_CHECK(call)                                                                         \
  do {                                                                                           \
    const ncclResult_t nccl_rc_ = (call);                                                        \
    if (nccl_rc_ != ncclSuccess)                                                                 \
      ::lockstep::check_failed("NCCL", #call, ncclGetErrorString(nccl_rc_), __FILE__, __LINE__); \
  } while (0)

#define CUDA_CHECK(call)                                                                         \
  do {                                                                                           \
    const cudaError_t cuda_rc_ = (call);                                                         \
    if (cuda_rc_ != cudaSuccess)                                                                 \
      ::lockstep::check_failed("CUDA", #call, cudaGetErrorString(cuda_rc_), __FILE__, __LINE__); \
  } while (0)
