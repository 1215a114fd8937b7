#!/usr/bin/env bash
# Submits a hyper-parameter sweep as one Slurm job array (slurm/sweep.sbatch): element I
# trains run I of FILE in SWEEP_DIR/<run name>/. FILE is lines of KEY=VALUE[,VALUE...]
# (a line is every combination of its values; the sweep is all the lines' runs):
#   lr=0.05,0.1 batch-size=64,128        4 runs
#   model=resnet lr=0.1                  1 run
#
#   slurm/sweep.sh [--sbatch "ARGS"] [--max-parallel N] FILE SWEEP_DIR [-- lockstep train options]
#     --sbatch "ARGS"     extra sbatch arguments (account, partition, time, nodes, GPUs, ...)
#     --max-parallel N    at most N runs at once (--array=...%N)
#   environment: JOB_CONFIG, LOCKSTEP_BIN, LAUNCHER as for the templates (job_common.sh)
# Every run's options are checked (`lockstep sweep FILE -- OPTIONS`) before anything is submitted; FILE
# is copied to SWEEP_DIR/sweep.overrides. Prints the array's job id. Submitting the same
# sweep again continues its unfinished runs. Compare them: lockstep report SWEEP_DIR.
# Run from the repository root (or with lockstep installed: module load lockstep).
set -euo pipefail
SBATCH_ARGS="" MAX=""
usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --sbatch) SBATCH_ARGS=$2; shift 2 ;;
    --max-parallel) MAX=$2; shift 2 ;;
    -h|--help) usage ;;
    --) shift; break ;;
    -*) echo "sweep.sh: unknown option $1" >&2; usage ;;
    *) if [ -z "${FILE:-}" ]; then FILE=$1; elif [ -z "${SWEEP_DIR:-}" ]; then SWEEP_DIR=$1; else usage; fi; shift ;;
  esac
done
[ -n "${FILE:-}" ] && [ -n "${SWEEP_DIR:-}" ] || usage
[ -f "$FILE" ] || { echo "sweep.sh: no sweep file $FILE" >&2; exit 2; }
LOCKSTEP_BIN=${LOCKSTEP_BIN:-$(command -v lockstep || echo build/lockstep)}
TEMPLATE=${LOCKSTEP_SHARE:-.}/slurm/sweep.sbatch
[ -f "$TEMPLATE" ] || { echo "sweep.sh: no template $TEMPLATE (run from the repository root)" >&2; exit 2; }
# Every run's options, checked with the options after -- (a typo there was submitted to every
# array element); a run's directory, resume policy and config are the sweep's, refused in the
# file and after -- under any name (every run went into one directory). A sweep value wins over
# the same option after -- (sweep.sbatch puts it last). The list goes to the terminal.
"$LOCKSTEP_BIN" sweep "$FILE" -- "$@" >&2 || exit $?
n=$("$LOCKSTEP_BIN" sweep "$FILE" --count)
mkdir -p "$SWEEP_DIR"
SWEEP_DIR=$(cd "$SWEEP_DIR" && pwd)
# A SWEEP_DIR holds one sweep: another file there would make its pending array elements run
# other runs (the file was replaced silently). The same file again continues it.
if [ -f "$SWEEP_DIR/sweep.overrides" ] && ! cmp -s "$FILE" "$SWEEP_DIR/sweep.overrides"; then
  echo "sweep.sh: $SWEEP_DIR holds another sweep (its sweep.overrides differs from $FILE): choose another SWEEP_DIR" >&2
  exit 2
fi
cp "$FILE" "$SWEEP_DIR/sweep.overrides"
# shellcheck disable=SC2086
SWEEP_FILE=$SWEEP_DIR/sweep.overrides SWEEP_DIR=$SWEEP_DIR LOCKSTEP_BIN=$LOCKSTEP_BIN \
  sbatch --parsable --array="0-$((n - 1))${MAX:+%$MAX}" $SBATCH_ARGS "$TEMPLATE" "$@"
