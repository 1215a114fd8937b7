// env: the environment variables lockstep reads, named once (STYLE rule 10: environment
// variables only for operational knobs and launcher facts, never for training options).
#pragma once

namespace lockstep::env {

// Launcher facts: how many processes a launcher started (a serial tool refuses > 1).
inline constexpr const char* kOmpiWorldSize = "OMPI_COMM_WORLD_SIZE";  // also: started by mpirun
inline constexpr const char* kPmiSize = "PMI_SIZE";
inline constexpr const char* kPmixSize = "PMIX_SIZE";
inline constexpr const char* kSlurmStepTasks = "SLURM_STEP_NUM_TASKS";
inline constexpr const char* kSlurmJobId = "SLURM_JOB_ID";  // named in the run-dir lock
inline constexpr const char* kCudaVisibleDevices = "CUDA_VISIBLE_DEVICES";  // placement, doctor
// LibTorch's profiler (Kineto) log level: --trace.ops on a CPU-only node sets it to 5 (quiet)
// unless the user set it, or Kineto prints an "ERROR ... gpuGetDeviceCount failed" line.
inline constexpr const char* kKinetoLogLevel = "KINETO_LOG_LEVEL";
// glibc malloc tuning: a user who sets either keeps theirs (host_allocator).
inline constexpr const char* kMallocMmapThreshold = "MALLOC_MMAP_THRESHOLD_";
inline constexpr const char* kMallocTrimThreshold = "MALLOC_TRIM_THRESHOLD_";

// The variable's value, or nullptr when it is unset.
const char* get(const char* name);

}  // namespace lockstep::env
