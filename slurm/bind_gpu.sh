#!/bin/bash
# bind_gpu.sh CMD...: under mpirun inside a Slurm job with GPUs (job_common.sh puts it in
# front of lockstep), node-local rank R sees only GPU R of the node's list (the
# CUDA_VISIBLE_DEVICES Slurm set for the job), as srun --gpus-per-task=1 gives each task its
# own. mpirun binds rank R to the R-th group of --cpus-per-task cores, so on the usual node
# (GPU g attached to the socket of the g-th core group) each rank's GPU is next to its cores;
# lockstep's start-up lines and `lockstep doctor` show where each rank landed.
# More ranks on a node than GPUs in its list share them round-robin, with a warning (NCCL
# allows one rank per GPU: lockstep refuses that at start). A list that names no GPU
# (Slurm's NoDevFiles, -1: none given or hidden on purpose) is passed on as it is.
set -euo pipefail
IFS=, read -ra listed <<<"${CUDA_VISIBLE_DEVICES:-}"
gpus=()
for g in "${listed[@]}"; do  # "0, 1" (a hand-written list) is GPUs 0 and 1, not "0" and " 1"
  g=${g//[[:space:]]/}
  [ -n "$g" ] && gpus+=("$g")
done
rank=${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-0}}
case "$rank" in
  ''|*[!0-9]*) echo "bind_gpu.sh: the node-local rank '$rank' (OMPI_COMM_WORLD_LOCAL_RANK or SLURM_LOCALID) is not a number" >&2
               exit 2 ;;
esac
case "${CUDA_VISIBLE_DEVICES:-}" in NoDevFiles|-1) gpus=() ;; esac
if [ "${#gpus[@]}" -gt 0 ]; then
  if [ "$rank" -ge "${#gpus[@]}" ]; then
    echo "bind_gpu.sh: warning: node-local rank $rank shares GPU ${gpus[$((rank % ${#gpus[@]}))]}: the node lists" \
         "${#gpus[@]} GPU(s) (CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES}); request one per rank (--gpus-per-node" \
         "equal to --ntasks-per-node)" >&2
  fi
  export CUDA_VISIBLE_DEVICES=${gpus[$((rank % ${#gpus[@]}))]}
fi
exec "$@"
