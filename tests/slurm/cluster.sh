#!/usr/bin/env bash
# A real Slurm cluster on this machine for lockstep's template tests: slurmctld and two
# slurmd nodes, n1 and n2, each in its own UTS namespace (its own hostname), both on
# 127.0.0.1 with their own ports and TmpFS. Facts behind each setting:
# ../shared/SLURM-NOTES.md. Idempotent; about a second once installed.
# Each node declares two GPUs as a generic resource (GresTypes=gpu, Gres=gpu:2) over dummy
# device files ($DIR/dev/NODE/nvidia0-1, character devices with NVIDIA's major number when
# mknod works here, else empty files): no GPU is needed for Slurm to hand each task its own
# (CUDA_VISIBLE_DEVICES), which is what the placement tests look at. TaskPlugin=task/affinity
# binds each task to its cores (sched_setaffinity; no cgroups needed).
#
#   tests/slurm/cluster.sh start    # munge + slurmctld + slurmd n1, n2; fresh state
#   tests/slurm/cluster.sh stop
#   source <(tests/slurm/cluster.sh env)   # SLURM_CONF for sbatch/srun/squeue
#
# State lives in $LOCKSTEP_SLURM_DIR (default /tmp/lockstep-slurm), wiped on every start
# so job ids and PMIx sockets never collide with a previous cluster. n1 and n2 are added
# to /etc/hosts (Open MPI resolves peers by name). Root only (slurmd, unshare).
set -euo pipefail
DIR=${LOCKSTEP_SLURM_DIR:-/tmp/lockstep-slurm}
CONF=$DIR/slurm.conf
NODES=(n1 n2)

need_root() { [ "$(id -u)" = 0 ] || { echo "cluster.sh: must run as root (slurmd)" >&2; exit 2; }; }

install() {
  command -v slurmctld >/dev/null && command -v munged >/dev/null && return
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
}

write_conf() {
  local host res port=6818
  host=$(hostname -s)
  # The machine's resources, declared for each node (more than the machine has: 'inval').
  res=$(slurmd -C | head -1 | grep -Eo 'CPUs=[0-9]+ .*RealMemory=[0-9]+' | sed 's/ Boards=[0-9]*//')
  cat > "$CONF" <<CONF
ClusterName=lockstep-test
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
GresTypes=gpu
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MailProg=/bin/true
EnforcePartLimits=ALL
ReturnToService=2
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd-%n.pid
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd-%n.log
TmpFS=$DIR/tmp/%n
CONF
  : > "$DIR/gres.conf"
  for n in "${NODES[@]}"; do
    echo "NodeName=$n NodeAddr=127.0.0.1 Port=$port $res Gres=gpu:2 State=UNKNOWN" >> "$CONF"
    # GPU g is next to core g (Cores=): the topology a site's gres.conf declares (or NVML finds).
    for g in 0 1; do echo "NodeName=$n Name=gpu File=$DIR/dev/$n/nvidia$g Cores=$g" >> "$DIR/gres.conf"; done
    port=$((port + 1))
  done
  echo "PartitionName=debug Nodes=$(IFS=,; echo "${NODES[*]}") Default=YES MaxTime=INFINITE State=UP" >> "$CONF"
}

start() {
  need_root
  install
  stop >/dev/null 2>&1 || true
  rm -rf "$DIR"
  mkdir -p "$DIR/state"
  for n in "${NODES[@]}"; do
    mkdir -p "$DIR/spool/$n" "$DIR/tmp/$n" "$DIR/dev/$n"
    for g in 0 1; do mknod "$DIR/dev/$n/nvidia$g" c 195 "$g" 2>/dev/null || : > "$DIR/dev/$n/nvidia$g"; done
    grep -Eq "^127\.0\.0\.1[[:space:]].*\b$n\b" /etc/hosts || echo "127.0.0.1 $n" >> /etc/hosts
  done
  write_conf
  mkdir -p /run/munge && chown munge:munge /run/munge
  pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged
  slurmctld -f "$CONF"
  for n in "${NODES[@]}"; do
    # Its own hostname: Open MPI names shared-memory segments after it.
    unshare --uts sh -c "hostname $n && exec slurmd -f $CONF -N $n"
  done
  for _ in $(seq 1 100); do
    if [ "$(SLURM_CONF=$CONF sinfo -h -N -o %t 2>/dev/null | grep -c idle)" = "${#NODES[@]}" ]; then
      echo "slurm cluster up: nodes ${NODES[*]} ($CONF)"
      return
    fi
    sleep 0.1
  done
  echo "cluster.sh: nodes not idle after 10 s; see $DIR/*.log" >&2
  SLURM_CONF=$CONF sinfo -N >&2 || true
  exit 1
}

stop() {
  for f in "$DIR"/slurmd-*.pid "$DIR/slurmctld.pid"; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  for _ in $(seq 1 50); do
    pgrep -x slurmd >/dev/null || pgrep -x slurmctld >/dev/null || break
    sleep 0.1
  done
  pkill -x slurmstepd 2>/dev/null || true
  echo "slurm cluster stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
