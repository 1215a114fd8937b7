#!/usr/bin/env bash
# Memory format: lockstep's training throughput with --model.memory-format contiguous
# (NCHW) and channels-last (what auto picks on CPU), interleaved, PAIRS pairs, for the
# reference CNN (jobs/fashion_mnist_long.ini) and, when its data is there, the video job's
# c3d (jobs/video_behaviour.ini). Prints samples/s per run, the medians and their ratio.
#   bash bench/memory_format.sh [PAIRS] [NP]      (default 2 2; about 2 minutes)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${LOCKSTEP_BUILD:-$ROOT/build}
PAIRS=${1:-2} NP=${2:-2}
WORK=${MF_WORK:-/tmp/lockstep-memory-format}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cd "$ROOT"
[ -f data/fashion-mnist/manifest.json ] || "$BUILD/lockstep" shard --input idx:/usr/share/datasets/fashion-mnist \
  --output data/fashion-mnist --shards 4 --name fashion-mnist >/dev/null
mkdir -p "$WORK"
JOBS="fashion_mnist_long:300"
[ -f data/video-behaviour/manifest.json ] && JOBS="$JOBS video_behaviour:40"
for spec in $JOBS; do
  job=${spec%%:*} steps=${spec##*:}
  : >"$WORK/$job.txt"
  for pair in $(seq "$PAIRS"); do
    for mf in contiguous channels-last; do
      rm -rf "$WORK/run"
      mpirun -np "$NP" "$BUILD/lockstep" train --config "jobs/$job.ini" --run.dir "$WORK/run" --run.resume none \
        --model.memory-format "$mf" --train.max-steps "$steps" --data.val-split none --data.test-split none \
        >"$WORK/run.log" 2>&1 || { tail -5 "$WORK/run.log"; exit 1; }
      sps=$(grep -o 'finished at step [0-9]*: [^,]*, [0-9.]* samples/s' "$WORK/run.log" | grep -o '[0-9.]* samples/s' | cut -d' ' -f1)
      echo "$job $mf pair $pair: $sps samples/s"
      echo "$mf $sps" >>"$WORK/$job.txt"
    done
  done
  python3 - "$WORK/$job.txt" "$job" "$NP" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {mf: st.median(float(v) for m, v in rows if m == mf) for mf in ("contiguous", "channels-last")}
print(f"{sys.argv[2]} at {sys.argv[3]} rank(s): contiguous {med['contiguous']:.0f}, channels-last "
      f"{med['channels-last']:.0f} samples/s: {med['channels-last'] / med['contiguous']:.2f}x")
PY
done
