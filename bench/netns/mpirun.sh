#!/usr/bin/env bash
# mpirun.sh: N ranks, one per bench host lsh0..lsh(N-1) (hosts.sh up), launched through
# agent.sh; TCP only (no shared memory between "hosts"). Yield when idle: on a VM with few
# cores the "NIC" is veth, whose packets the kernel delivers in softirq on the same cores;
# ranks busy-polling them starve it until the next scheduler tick and every message takes
# ~4 ms (measured: a 4 KiB all-reduce 8 ms without, 34 us with). Real hosts have NIC
# interrupts and spare cores.
#   bash mpirun.sh N CMD [ARGS...]   (MPIEXEC: the launcher, default mpirun; LIMIT_S: seconds, default 600)
set -euo pipefail
n=${1:?usage: mpirun.sh N CMD [ARGS...]}
shift
hosts=""
for ((i = 0; i < n; i++)); do hosts+="${hosts:+,}10.77.0.$((i + 1)):1"; done
exec timeout "${LIMIT_S:-600}" "${MPIEXEC:-mpirun}" -np "$n" --host "$hosts" \
  --mca plm_rsh_agent "$(cd "$(dirname "$0")" && pwd)/agent.sh" \
  --mca oob_tcp_if_include 10.77.0.0/24 --mca btl self,tcp --mca btl_tcp_if_include 10.77.0.0/24 \
  --mca pml ob1 --mca mpi_yield_when_idle 1 "$@"
