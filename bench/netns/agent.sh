#!/usr/bin/env bash
# agent.sh: Open MPI's "ssh" into a bench host (plm_rsh_agent). mpirun runs
#   agent.sh [ssh options] 10.77.0.<i+1> <command line>
# and this runs the command line (Open MPI's orted) inside namespace lsh<i>, with its own
# hostname lshost<i> (a UTS namespace), as ssh would on a real host. nsenter, not
# `ip netns exec`, which remounts /sys (SLURM-NOTES).
set -euo pipefail
while [[ $# -gt 0 && $1 == -* ]]; do shift; done  # ssh options: none apply
host=${1:?agent.sh: no host}
shift
[[ $host =~ ^10\.77\.0\.([0-9]+)$ ]] || { echo "agent.sh: not a bench host: $host" >&2; exit 255; }
i=$((BASH_REMATCH[1] - 1))
exec nsenter --net=/run/netns/lsh$i unshare --uts /bin/sh -c "hostname lshost$i && $*"
