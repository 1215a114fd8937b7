#!/usr/bin/env bash
# lockstep against its anchors, one command, one report (after .ci/setup has built it):
#   bash bench/run.sh [OUT_DIR]        (default bench/results/<UTC date-time>)
# On this machine, in one invocation, each pair interleaved (A B A B ..., PAIRS pairs,
# default 3; median and min-max reported):
#   1. training throughput, reference CNN on Fashion-MNIST, batch 64/rank, 1 thread/rank,
#      1 and 2 ranks: lockstep vs bench/ddp_cnn.py (PyTorch DDP, gloo, torchrun, the same
#      torch wheel); STEPS steps (default 300), the first 100 left out as warm-up;
#   2. all-reduce 4 KiB .. 64 MiB at 2 ranks: lockstep's communicator vs raw MPI_Allreduce;
#   3. I/O: the shard reader vs a raw sequential read() of the same files (warm cache);
#   4. launch -> first step completed at 2 ranks: lockstep (mpirun) vs DDP (torchrun);
#   5. weak-scaling efficiency 1 -> 2 ranks, exposed-communication and data-wait shares.
# Writes OUT_DIR/report.json and OUT_DIR/report.md (also printed) with each figure, its
# anchor's figure and the ratio, and the targets.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${LOCKSTEP_BUILD:-$ROOT/build}
VENV=${LOCKSTEP_VENV:-$HOME/.cache/lockstep/venv-torch2.11}
OUT=${1:-$ROOT/bench/results/$(date -u +%Y%m%dT%H%M%SZ)}
PAIRS=${PAIRS:-3}
STEPS=${STEPS:-300}
WORK=$OUT/work
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$WORK"
cd "$WORK"
LS=$BUILD/lockstep
[ -x "$LS" ] || { echo "bench/run.sh: $LS not built (bash .ci/setup)" >&2; exit 2; }
[ -f fmnist/manifest.json ] || "$LS" shard --input idx:/usr/share/datasets/fashion-mnist --output fmnist --shards 4 >/dev/null
now() { python3 -c 'import time; print(repr(time.time()))'; }
log() { echo "[bench $(date -u +%H:%M:%S)] $*" >&2; }

lockstep_train() {  # NP STEPS RUN_DIR: prints the end row's JSON
  rm -rf "$3"
  mpirun -np "$1" "$LS" train --data fmnist --batch-size 64 --threads 1 --max-steps "$2" --log-every 100 \
    --run-dir "$3" --data.val-split none --train.tensorboard false >/dev/null
}
ddp_train() {  # NP STEPS WARMUP: prints ddp_cnn.py's JSON line
  OMP_NUM_THREADS=1 "$VENV/bin/torchrun" --standalone --nproc_per_node "$1" "$ROOT/bench/ddp_cnn.py" \
    --steps "$2" --warmup "$3" --batch-size 64 2>/dev/null | tail -1
}

: > train.jsonl
for np in 1 2; do
  for pair in $(seq "$PAIRS"); do
    log "training, $np rank(s), pair $pair/$PAIRS"
    lockstep_train "$np" "$STEPS" "ls-$np-$pair"
    echo "{\"impl\": \"lockstep\", \"np\": $np, \"metrics\": \"ls-$np-$pair/metrics.jsonl\"}" >> train.jsonl
    echo "{\"impl\": \"ddp\", \"np\": $np, \"result\": $(ddp_train "$np" "$STEPS" 100)}" >> train.jsonl
  done
done

log "all-reduce, 2 ranks"
mpirun -np 2 "$BUILD/bench/allreduce_bench" --pairs "$PAIRS" --max-mb 64 | tail -1 > allreduce.json

log "I/O: reader vs raw read"
"$BUILD/bench/reader_bench" fmnist --batch 64 --reps "$PAIRS" | tail -1 > io.json

: > launch.jsonl
for pair in $(seq "$PAIRS"); do
  log "launch -> first step, 2 ranks, pair $pair/$PAIRS"
  t0=$(now); lockstep_train 2 1 "launch-$pair"
  echo "{\"impl\": \"lockstep\", \"t0\": $t0, \"metrics\": \"launch-$pair/metrics.jsonl\"}" >> launch.jsonl
  t0=$(now); r=$(ddp_train 2 1 1)
  echo "{\"impl\": \"ddp\", \"t0\": $t0, \"result\": $r}" >> launch.jsonl
done

python3 "$ROOT/bench/report.py" "$WORK" "$OUT" "$PAIRS" "$STEPS"
