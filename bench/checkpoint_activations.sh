#!/usr/bin/env bash
# The cost of --model.checkpoint-activations: peak memory and training speed of the same
# job with and without it (1 rank, the video set, a fixed number of steps), interleaved
# RUNS times. Memory: the process's peak resident set on CPU (GNU time %M: activations
# live in host memory there, next to a constant ~0.5 GB of libraries and data), the peak
# of torch's caching allocator on a GPU (lockstep's own "peak device memory" line).
# Speed: samples/s of the run (its end row), so the recomputation's cost shows directly.
#   bash bench/checkpoint_activations.sh [RUNS] [MODEL] [DEPTH] [WIDTH] [BATCH] [STEPS]
#   (default 2 r3d 18 16 32 40; needs bash jobs/data/video_behaviour.sh)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${LOCKSTEP_BUILD:-$ROOT/build}
RUNS=${1:-2} MODEL=${2:-r3d} DEPTH=${3:-18} WIDTH=${4:-16} BATCH=${5:-32} STEPS=${6:-40}
DATA=${CKPT_BENCH_DATA:-$ROOT/data/video-behaviour}
WORK=${CKPT_BENCH_WORK:-/tmp/lockstep-ckpt-bench}
[ -f "$DATA/manifest.json" ] || { echo "no $DATA: run bash jobs/data/video_behaviour.sh first" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "checkpoint_activations.sh: needs GNU time (apt-get install time)" >&2; exit 2; }
mkdir -p "$WORK"
RESULTS=$WORK/results.txt
: >"$RESULTS"
for r in $(seq 1 "$RUNS"); do
  for ckpt in false true; do
    rm -rf "$WORK/run"
    /usr/bin/time -f "%M" -o "$WORK/rss" "$BUILD/lockstep" train --data "$DATA" --model "$MODEL" --model.depth "$DEPTH" \
      --model.width "$WIDTH" --batch-size "$BATCH" --max-steps "$STEPS" --epochs 100 --threads 2 \
      --model.checkpoint-activations "$ckpt" --run-dir "$WORK/run" --resume none --log-every 1000 >"$WORK/log" 2>&1 ||
      { cat "$WORK/log"; exit 1; }
    sps=$(python3 -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1])][-1]["samples_per_s"])' \
          "$WORK/run/metrics.jsonl" 2>/dev/null || grep -o '[0-9.]* samples/s' "$WORK/log" | tail -1 | cut -d' ' -f1)
    gpu=$(grep -o 'peak device memory[^;]*' "$WORK/log" | tail -1 || true)
    echo "$ckpt $(cat "$WORK/rss") $sps ${gpu:-}" >>"$RESULTS"
    tail -1 "$RESULTS"
  done
done
python3 - "$RESULTS" "$MODEL" "$DEPTH" "$WIDTH" "$BATCH" <<'PY'
import statistics, sys
rows = [l.split(None, 3) for l in open(sys.argv[1])]
def med(flag, col): return statistics.median(float(r[col]) for r in rows if r[0] == flag)
off_rss, on_rss = med("false", 1) / 1024, med("true", 1) / 1024
off_sps, on_sps = med("false", 2), med("true", 2)
print(f"{sys.argv[2]}-{sys.argv[3]} width {sys.argv[4]}, batch {sys.argv[5]}, 1 rank:")
print(f"  stored activations     peak RSS {off_rss:8.0f} MiB   {off_sps:7.1f} samples/s")
print(f"  checkpointed           peak RSS {on_rss:8.0f} MiB   {on_sps:7.1f} samples/s")
print(f"  memory {on_rss / off_rss:.2f}x, speed {on_sps / off_sps:.2f}x")
for r in rows:
    if len(r) > 3: print("  GPU:", r[0], r[3].strip())
PY
