#!/usr/bin/env bash
# Training throughput, lockstep vs the PyTorch DDP script (bench/ddp_cnn.py), same wheel,
# model, data, per-rank batch (64) and threads (1), at 1 and 2 ranks; runs interleaved
# (lockstep, DDP, lockstep, ...), 3 pairs, median and min-max. Both skip the first 100
# steps (warm-up) and time the next 200.
#   bash bench/train_vs_ddp.sh [WORKDIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${LOCKSTEP_BUILD:-$ROOT/build}
VENV=${LOCKSTEP_VENV:-$HOME/.cache/lockstep/venv-torch2.11}
WORK=${1:-/tmp/lockstep-bench-ddp}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$WORK" && cd "$WORK"
[ -f fmnist/manifest.json ] || "$BUILD/lockstep" shard --input idx:/usr/share/datasets/fashion-mnist --output fmnist --shards 4 >/dev/null

lockstep_sps() {  # NP -> samples/s of steps 101..300
  rm -rf run
  mpirun -np "$1" "$BUILD/lockstep" train --data fmnist --batch-size 64 --threads 1 --max-steps 300 --log-every 100 \
    --run-dir run --data.val-split none >/dev/null
  python3 -c "
import json
rows=[json.loads(l) for l in open('run/metrics.jsonl') if '\"train\"' in l][1:]
print(sum(r['samples_per_s']*r['seconds'] for r in rows)/sum(r['seconds'] for r in rows))"
}
ddp_sps() {
  OMP_NUM_THREADS=1 "$VENV/bin/torchrun" --standalone --nproc_per_node "$1" "$ROOT/bench/ddp_cnn.py" \
    --steps 300 --warmup 100 --batch-size 64 2>/dev/null | python3 -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['samples_per_s'])"
}
for np in 1 2; do
  ls_v="" ddp_v=""
  for pair in 1 2 3; do ls_v+="$(lockstep_sps $np) "; ddp_v+="$(ddp_sps $np) "; done
  python3 - "$np" "$ls_v" "$ddp_v" <<'PY'
import statistics as st, sys
n, a, b = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
print(f"{n} rank(s): lockstep {st.median(a):7.0f} samples/s ({min(a):.0f}-{max(a):.0f}), "
      f"DDP {st.median(b):7.0f} ({min(b):.0f}-{max(b):.0f}), ratio {st.median(a)/st.median(b):.2f}x")
PY
done
