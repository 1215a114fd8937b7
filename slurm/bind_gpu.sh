#!/bin/bash
# bind_gpu.sh CMD...: under mpirun inside a Slurm job with GPUs (job_common.sh puts it in
# front of lockstep), node-local rank R sees only GPU R of the node's list (the
# CUDA_VISIBLE_DEVICES Slurm set for the job), as srun --gpus-per-task=1 gives each task its
# own. mpirun binds rank R to the R-th group of --cpus-per-task cores, so on the usual node
# (GPU g attached to the socket of the g-th core group) each rank's GPU is next to its cores;
# lockstep's start-up lines and `lockstep doctor` show where each rank landed.
set -euo pipefail
IFS=, read -ra gpus <<<"${CUDA_VISIBLE_DEVICES:-}"
rank=${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-0}}
if [ "${#gpus[@]}" -gt 0 ]; then export CUDA_VISIBLE_DEVICES=${gpus[$((rank % ${#gpus[@]}))]}; fi
exec "$@"
