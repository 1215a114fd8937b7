// launch_checks: what the launcher's environment says about the processes it started,
// checked before a command does anything. A launcher's size variables (mpirun's
// OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_SIZE, srun's SLURM_STEP_NUM_TASKS) above 1 mean
// several copies of this process exist.
#pragma once

namespace lockstep::app {

// A serial COMMAND (shard, export, report) started as several copies: they would all write
// the same files (two exports under one mpirun both "succeeded" into one file). UsageError.
void require_single_process(const char* command);

// An MPI command whose world is WORLD_SIZE while its MPI launcher (mpirun, a PMI: not srun's
// step size, which a task starting a 1-rank job of its own inherits) started more copies:
// the ranks are not connected (an MPI other than the one lockstep was built with, srun without
// --mpi=pmix), each a job of 1 rank; one trained alone and the others were refused as "a
// run directory in use" by their own siblings (a hostile finding). UsageError.
void require_connected_ranks(int world_size);

}  // namespace lockstep::app
