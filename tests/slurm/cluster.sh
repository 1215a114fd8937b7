#!/usr/bin/env bash
# A real one-node Slurm cluster on this machine for lockstep's template tests
# (facts: ../shared/SLURM-NOTES.md). Idempotent; about a second once installed.
#
#   tests/slurm/cluster.sh start    # munge + slurmctld + slurmd, fresh state
#   tests/slurm/cluster.sh stop
#   source <(tests/slurm/cluster.sh env)   # SLURM_CONF for sbatch/srun/squeue
#
# State lives in $LOCKSTEP_SLURM_DIR (default /tmp/lockstep-slurm), wiped on every start
# so job ids and PMIx sockets never collide with a previous cluster.
set -euo pipefail
DIR=${LOCKSTEP_SLURM_DIR:-/tmp/lockstep-slurm}
CONF=$DIR/slurm.conf

need_root() { [ "$(id -u)" = 0 ] || { echo "cluster.sh: must run as root (slurmd)" >&2; exit 2; }; }

install() {
  command -v slurmctld >/dev/null && command -v munged >/dev/null && return
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
}

write_conf() {
  local host node
  host=$(hostname -s)
  node=$(slurmd -C | head -1 | grep -Eo 'CPUs=[0-9]+ .*RealMemory=[0-9]+' | sed 's/ Boards=[0-9]*//')
  cat > "$CONF" <<CONF
ClusterName=lockstep-test
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MailProg=/bin/true
EnforcePartLimits=ALL
ReturnToService=2
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
TmpFS=$DIR/tmp
NodeName=$host $node State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
}

start() {
  need_root
  install
  stop >/dev/null 2>&1 || true
  rm -rf "$DIR"
  mkdir -p "$DIR/state" "$DIR/spool" "$DIR/tmp"
  write_conf
  mkdir -p /run/munge && chown munge:munge /run/munge
  pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged
  slurmctld -f "$CONF"
  slurmd -f "$CONF"
  for _ in $(seq 1 50); do
    if SLURM_CONF=$CONF sinfo -h -o %t 2>/dev/null | grep -q idle; then
      echo "slurm cluster up ($CONF)"
      return
    fi
    sleep 0.2
  done
  echo "cluster.sh: node not idle after 10 s; see $DIR/*.log" >&2
  SLURM_CONF=$CONF sinfo >&2 || true
  exit 1
}

stop() {
  for f in "$DIR/slurmd.pid" "$DIR/slurmctld.pid"; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  for _ in $(seq 1 50); do
    pgrep -x slurmd >/dev/null || pgrep -x slurmctld >/dev/null || break
    sleep 0.1
  done
  echo "slurm cluster stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
