#!/usr/bin/env bash
# Submits a weak- or strong-scaling series of lockstep jobs, one after another (each job
# depends on the previous, so they never share nodes), then `lockstep report SWEEP_DIR`
# makes the table and plot.
#
#   slurm/scaling_sweep.sh [options] SWEEP_DIR [-- lockstep train options]
#     --ranks "1 2 4 8"      rank counts (default "1 2 4 8"; the list must start at 1)
#     --ranks-per-node N     ranks per node (default 2): nodes = ceil(ranks / N)
#     --mode weak|strong     weak: per-rank batch fixed (the config's); strong: the global
#                            batch --global-batch (default 256) split over the ranks
#     --template FILE        the sbatch template (default slurm/multi_node.sbatch)
#     --sbatch "ARGS"        extra sbatch arguments (account, partition, time, ...)
#   environment: JOB_CONFIG, LOCKSTEP_BIN, LAUNCHER as for the templates (job_common.sh)
# Each run writes SWEEP_DIR/ranks-N/ (metrics.jsonl, doctor.json with a timed all-reduce)
# and SWEEP_DIR/ranks-N.out. Prints the job ids, one per line, last line the last job.
# Run from the repository root. Example (a short fixed-step series):
#   slurm/scaling_sweep.sh --ranks "1 2 4" sweeps/cnn -- --train.max-steps 300 --train.log-every 50
set -euo pipefail
RANKS="1 2 4 8"
PER_NODE=2
MODE=weak
GLOBAL_BATCH=256
TEMPLATE=${LOCKSTEP_SHARE:-.}/slurm/multi_node.sbatch  # installed, or this checkout
SBATCH_ARGS=""
usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) RANKS=$2; shift 2 ;;
    --ranks-per-node) PER_NODE=$2; shift 2 ;;
    --mode) MODE=$2; shift 2 ;;
    --global-batch) GLOBAL_BATCH=$2; shift 2 ;;
    --template) TEMPLATE=$2; shift 2 ;;
    --sbatch) SBATCH_ARGS=$2; shift 2 ;;
    -h|--help) usage ;;
    --) break ;;
    -*) echo "scaling_sweep.sh: unknown option $1" >&2; usage ;;
    *) [ -z "${SWEEP_DIR:-}" ] || usage; SWEEP_DIR=$1; shift ;;
  esac
done
[ -n "${SWEEP_DIR:-}" ] || usage
[ "${1:-}" = -- ] && shift
case "$MODE" in weak|strong) ;; *) echo "scaling_sweep.sh: --mode must be weak or strong" >&2; exit 2 ;; esac
[ "${RANKS%% *}" = 1 ] || { echo "scaling_sweep.sh: --ranks must start at 1 (the baseline)" >&2; exit 2; }
[ -f "$TEMPLATE" ] || { echo "scaling_sweep.sh: no template $TEMPLATE (run from the repository root)" >&2; exit 2; }
# The options the sweep sets itself: a run directory given after -- put every job in one (the
# 2-rank job resumed the 1-rank one's checkpoint and trained nothing); a batch size given in
# strong mode won over --global-batch (the "strong" series ran other global batches).
for a in "$@"; do
  case "$a" in
    --run.dir|--run.dir=*|--run-dir|--run-dir=*|--run.resume|--run.resume=*|--resume|--resume=*)
      echo "scaling_sweep.sh: ${a%%=*} after --: the sweep gives each job its run directory SWEEP_DIR/ranks-N" >&2
      exit 2 ;;
    --train.batch-size|--train.batch-size=*|--batch-size|--batch-size=*)
      if [ "$MODE" = strong ]; then
        echo "scaling_sweep.sh: ${a%%=*} after -- in strong mode: the per-rank batch is --global-batch / ranks" >&2
        exit 2
      fi ;;
  esac
done

mkdir -p "$SWEEP_DIR"
SWEEP_DIR=$(cd "$SWEEP_DIR" && pwd)
printf 'mode=%s\nranks=%s\nranks_per_node=%s\ncommand=%s\n' "$MODE" "$RANKS" "$PER_NODE" "$0 $*" > "$SWEEP_DIR/sweep.txt"
prev=""
for n in $RANKS; do
  nodes=$(( (n + PER_NODE - 1) / PER_NODE ))
  per_node=$(( n < PER_NODE ? n : PER_NODE ))
  [ $((nodes * per_node)) = "$n" ] || { echo "scaling_sweep.sh: $n ranks do not fill $nodes node(s) of $PER_NODE" >&2; exit 2; }
  extra=()
  if [ "$MODE" = strong ]; then
    [ $((GLOBAL_BATCH % n)) = 0 ] || { echo "scaling_sweep.sh: --global-batch $GLOBAL_BATCH is not divisible by $n" >&2; exit 2; }
    extra=(--train.batch-size $((GLOBAL_BATCH / n)))
  fi
  # shellcheck disable=SC2086
  id=$(RUN_DIR="$SWEEP_DIR/ranks-$n" LOCKSTEP_DOCTOR=1 sbatch --parsable --job-name="sweep-$n" \
        --nodes="$nodes" --ntasks-per-node="$per_node" --output="$SWEEP_DIR/ranks-$n.out" \
        ${prev:+--dependency=afterany:$prev} $SBATCH_ARGS "$TEMPLATE" "${extra[@]}" "$@")
  echo "$id"
  prev=$id
done
