#!/usr/bin/env bash
# Distributed-core benchmark, one command (after .ci/setup has built lockstep):
#   bash bench/dist.sh [WORKDIR]
# 1. all-reduce: lockstep's communicator vs raw MPI_Allreduce, 4 KiB .. 64 MiB, 2 ranks;
# 2. exposed-communication share of step time (reference CNN, Fashion-MNIST, 2 ranks),
#    overlap on and off;
# 3. weak-scaling efficiency 1 -> 2 ranks, 1 thread per rank, same per-rank batch.
# Runs alternate (A B A B ...), medians reported.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${LOCKSTEP_BUILD:-$ROOT/build}
WORK=${1:-/tmp/lockstep-bench-dist}
LS=$BUILD/lockstep
STEPS=${STEPS:-300}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$WORK"
cd "$WORK"
[ -f fmnist/manifest.json ] || "$LS" shard --input idx:/usr/share/datasets/fashion-mnist --output fmnist --shards 4 >/dev/null

echo "== all-reduce bandwidth, 2 ranks"
mpirun -np 2 "$BUILD/bench/allreduce_bench" --pairs 3

run() {  # run NAME NP ARGS...: prints samples/s, exposed share, backward ms/step
  local name=$1 np=$2; shift 2
  rm -rf "$name"
  mpirun -np "$np" "$LS" train --data fmnist --batch-size 64 --threads 1 --max-steps "$STEPS" --log-every 100 \
    --run-dir "$name" "$@" >/dev/null
  python3 - "$name/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"train"' in l]
rows = rows[1:]  # skip the first window (warm-up)
secs = sum(r["seconds"] for r in rows)
steps = 100 * len(rows)
print(sum(r["samples_per_s"] * r["seconds"] for r in rows) / secs,
      100 * sum(r["exposed_comm_s"] for r in rows) / secs,
      1000 * sum(r["backward_s"] for r in rows) / steps)
PY
}

echo; echo "== training, reference CNN, batch 64/rank, $STEPS steps, windows after the first 100 steps"
declare -A sps exposed
for pair in 1 2 3; do
  for cfg in "r1:1:" "r2:2:--dist.overlap true" "r2_nooverlap:2:--dist.overlap false"; do
    IFS=: read -r name np extra <<<"$cfg"
    read -r s e b < <(run "$name" "$np" $extra)
    sps[$name]+="$s "; exposed[$name]+="$e "
  done
done
python3 - "${sps[r1]}" "${sps[r2]}" "${sps[r2_nooverlap]}" "${exposed[r2]}" "${exposed[r2_nooverlap]}" <<'PY'
import statistics as st, sys
f = lambda s: [float(x) for x in s.split()]
r1, r2, r2n, e2, e2n = map(f, sys.argv[1:6])
m = st.median
print(f"1 rank:  {m(r1):8.0f} samples/s (min {min(r1):.0f}, max {max(r1):.0f})")
print(f"2 ranks, overlap on:  {m(r2):8.0f} samples/s (min {min(r2):.0f}, max {max(r2):.0f}), exposed comm {m(e2):.2f}% of step time")
print(f"2 ranks, overlap off: {m(r2n):8.0f} samples/s (min {min(r2n):.0f}, max {max(r2n):.0f}), exposed comm {m(e2n):.2f}% of step time")
print(f"weak-scaling efficiency 1 -> 2 ranks: {max(m(r2), m(r2n)) / (2 * m(r1)) * 100:.1f}% (best of the two)")
PY
