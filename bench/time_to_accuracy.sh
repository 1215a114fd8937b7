#!/usr/bin/env bash
# Time to accuracy: lockstep (jobs/fashion_mnist_long.ini, or TTA_JOB, + --train.stop-at val_acc>=TARGET)
# against the PyTorch DDP script with the same recipe (bench/ddp_tta.py), both at NP ranks,
# interleaved (lockstep, DDP, lockstep, ...), PAIRS pairs. The time is the launcher's wall
# time — launch, data loading, every epoch's validation, the final test evaluation and exit
# included. Both stop on the validation split and report the test split once, with the
# weights validation chose (best macro-F1). Prints one line per run and the table.
#   bash bench/time_to_accuracy.sh [PAIRS] [TARGET] [NP]      (default 3 0.925 2)
# About 8 minutes a pair on the 2-core CI machine.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${LOCKSTEP_BUILD:-$ROOT/build}
VENV=${LOCKSTEP_VENV:-$HOME/.cache/lockstep/venv-torch2.11}
PAIRS=${1:-3} TARGET=${2:-0.925} NP=${3:-2}
WORK=${TTA_WORK:-/tmp/lockstep-tta}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cd "$ROOT"
DATA=$ROOT/data/fashion-mnist
[ -f "$DATA/manifest.json" ] || "$BUILD/lockstep" shard --input idx:/usr/share/datasets/fashion-mnist \
  --output "$DATA" --shards 4 --name fashion-mnist >/dev/null
mkdir -p "$WORK"
JOB=${TTA_JOB:-jobs/fashion_mnist_long.ini}
# The job's augmentation, for the DDP script too (same recipe).
DDP_AUG=$(python3 - "$JOB" <<'PY'
import configparser, sys
c = configparser.ConfigParser()
c.read(sys.argv[1])
d = c["data"] if "data" in c else {}
out = []
if int(d.get("random-crop", "0")):
    out += ["--random-crop", d["random-crop"]]
if d.get("hflip", "false").lower() in ("true", "1", "yes", "on"):
    out.append("--hflip")
print(" ".join(out))
PY
)
RESULTS=$WORK/results.jsonl
: >"$RESULTS"

now() { date +%s.%N; }
run_lockstep() {  # PAIR
  local dir=$WORK/lockstep-$1 t0
  rm -rf "$dir"
  t0=$(now)
  mpirun -np "$NP" "$BUILD/lockstep" train --config "$JOB" --data "$DATA" --run.dir "$dir" \
    --train.stop-at "val_acc>=$TARGET" >"$dir.log" 2>&1 || { tail -5 "$dir.log"; exit 1; }
  python3 - "$dir/metrics.jsonl" "$t0" "$(now)" "$TARGET" <<'PY' | tee -a "$RESULTS"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
end = [r for r in rows if r["kind"] == "end"][-1]
evals = [r for r in rows if r["kind"] == "epoch" and "val_acc" in r]
print(json.dumps({"impl": "lockstep", "reached": "stopped_early" in end, "epochs": end["epoch"],
                  "val_acc": evals[-1]["val_acc"], "test_acc": end["test_acc"],
                  "wall_s": float(sys.argv[3]) - float(sys.argv[2])}))
PY
}
run_ddp() {  # PAIR
  local log=$WORK/ddp-$1.log t0
  t0=$(now)
  OMP_NUM_THREADS=1 "$VENV/bin/torchrun" --standalone --nproc_per_node "$NP" "$ROOT/bench/ddp_tta.py" \
    --data "$DATA" --target "$TARGET" $DDP_AUG >"$log" 2>&1 || { tail -5 "$log"; exit 1; }
  python3 - "$log" "$t0" "$(now)" <<'PY' | tee -a "$RESULTS"
import json, sys
r = json.loads([l for l in open(sys.argv[1]) if l.startswith('{"impl"')][-1])
print(json.dumps({"impl": "ddp", "reached": r["reached"], "epochs": r["epochs"], "val_acc": r["val_acc"],
                  "test_acc": r["test_acc"], "wall_s": float(sys.argv[3]) - float(sys.argv[2])}))
PY
}
echo "time to val_acc >= $TARGET, $JOB, $NP ranks, $PAIRS interleaved pairs ($(nproc) cores, $(uname -n))${DDP_AUG:+, augmentation: $DDP_AUG}"
for pair in $(seq "$PAIRS"); do run_lockstep "$pair"; run_ddp "$pair"; done
python3 - "$RESULTS" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("\n| | runs reaching target | wall s (median, min-max) | epochs | val acc | test acc |")
print("|---|---|---|---|---|---|")
med = {}
for impl in ("lockstep", "ddp"):
    r = [x for x in rows if x["impl"] == impl]
    w = [x["wall_s"] for x in r]
    med[impl] = st.median(w)
    print(f"| {impl} | {sum(x['reached'] for x in r)}/{len(r)} | {med[impl]:.0f} ({min(w):.0f}-{max(w):.0f}) | "
          f"{'/'.join(str(x['epochs']) for x in r)} | {st.median(x['val_acc'] for x in r) * 100:.2f}% | "
          f"{st.median(x['test_acc'] for x in r) * 100:.2f}% |")
print(f"\nlockstep / DDP wall time to target: {med['lockstep'] / med['ddp']:.2f}x (target <= 0.5x)")
PY
