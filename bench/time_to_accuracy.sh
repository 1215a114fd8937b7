#!/usr/bin/env bash
# Time to accuracy: lockstep (jobs/fashion_mnist_tta.ini, or TTA_JOB, + --train.stop-at
# val_acc>=TARGET) against the PyTorch DDP script with the same recipe (bench/ddp_tta.py),
# both at NP ranks, interleaved (lockstep, DDP, lockstep, ...), PAIRS pairs; pair k runs
# both with seed k, so the median is over seeds, not one seed's luck. The time is the
# launcher's wall time — launch, data loading, every epoch's evaluation, the final test
# evaluation and exit included. Prints one line per run and the table.
#   bash bench/time_to_accuracy.sh [PAIRS] [TARGET] [NP]      (default 3 0.925 2)
# TTA_ON=test (default): both evaluate the test split at every epoch end and stop once it
#   reaches TARGET — time to a *test* accuracy, as DAWNBench and MLPerf measure it (the
#   number is a time, not a selected model: nothing is chosen on test but when to stop);
# TTA_ON=val: both stop on the val split and report the test split once, with the weights
#   validation chose (best macro-F1).
# TTA_DDP_CL=N adds N runs of the DDP script in channels-last memory format after the pairs
# (what lockstep does by default on CPU, --model.memory-format auto): the row that says how
# much of the difference is the layout.
# On a GPU both use it (lockstep: NCCL, found by itself; the DDP script: --device auto,
# NCCL): one rank per GPU, so NP <= the GPUs. TTA_AMP=bf16 runs both under bf16 autocast
# (lockstep --train.amp bf16, the DDP script --amp bf16). LOCKSTEP_VENV names the Python
# with torchrun (on the GPU machine: its torch venv).
# About 5 minutes a pair on the 2-core CI machine.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${LOCKSTEP_BUILD:-$ROOT/build}
VENV=${LOCKSTEP_VENV:-$HOME/.cache/lockstep/venv-torch2.11}
PAIRS=${1:-3} TARGET=${2:-0.925} NP=${3:-2}
TTA_ON=${TTA_ON:-test}
case $TTA_ON in test|val) ;; *) echo "TTA_ON must be test or val, not '$TTA_ON'" >&2; exit 2 ;; esac
TTA_AMP=${TTA_AMP:-none}
case $TTA_AMP in none|bf16) ;; *) echo "TTA_AMP must be none or bf16, not '$TTA_AMP'" >&2; exit 2 ;; esac
WORK=${TTA_WORK:-/tmp/lockstep-tta}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cd "$ROOT"
DATA=$ROOT/data/fashion-mnist
[ -f "$DATA/manifest.json" ] || "$BUILD/lockstep" shard --input idx:/usr/share/datasets/fashion-mnist \
  --output "$DATA" --shards 4 --name fashion-mnist >/dev/null
mkdir -p "$WORK"
JOB=${TTA_JOB:-jobs/fashion_mnist_tta.ini}
# The job's recipe, for the DDP script too: planned epochs (the cosine's length), lr,
# batch, weight decay, warm-up and augmentation come from the job file; what the script
# cannot do (another model, optimiser or schedule, label smoothing) is refused here.
DDP_RECIPE=$(python3 - "$JOB" <<'PY'
import configparser, sys
c = configparser.ConfigParser()
c.read(sys.argv[1])
get = lambda sec, key, default: c[sec].get(key, default) if sec in c else default
bad = []
if get("model", "name", "cnn") != "cnn" or int(get("model", "width", "0")) not in (0, 32):
    bad.append("model: the reference CNN at width 32")
if float(get("model", "dropout", "0.25")) != 0.25:
    bad.append("model.dropout 0.25")
if get("train", "optimizer", "sgd") != "sgd" or float(get("train", "momentum", "0.9")) != 0.9:
    bad.append("train: SGD with momentum 0.9")
if get("train", "schedule", "cosine") != "cosine" or float(get("train", "label-smoothing", "0")) != 0:
    bad.append("train: a cosine schedule, no label smoothing")
if bad:
    sys.exit(f"time_to_accuracy.sh: bench/ddp_tta.py implements only {', '.join(bad)}; {sys.argv[1]} differs")
out = ["--epochs", get("train", "epochs", "15"), "--lr", get("train", "lr", "0.05"),
       "--batch-size", get("train", "batch-size", "64"), "--weight-decay", get("train", "weight-decay", "0.0005"),
       "--warmup-steps", get("train", "warmup-steps", "200")]
if int(get("data", "random-crop", "0")):
    out += ["--random-crop", get("data", "random-crop", "0")]
if get("data", "hflip", "false").lower() in ("true", "1", "yes", "on"):
    out.append("--hflip")
if float(get("data", "random-erase", "0")):
    out += ["--random-erase", get("data", "random-erase", "0")]
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
  mpirun -np "$NP" "$BUILD/lockstep" train --config "$JOB" --data "$DATA" --run.dir "$dir" --train.seed "$1" \
    --data.val-split "$TTA_ON" --train.stop-at "val_acc>=$TARGET" --train.amp "$TTA_AMP" >"$dir.log" 2>&1 || { tail -5 "$dir.log"; exit 1; }
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
run_ddp() {  # PAIR [--channels-last]
  local log=$WORK/ddp-$1${2:-}.log t0
  t0=$(now)
  OMP_NUM_THREADS=1 "$VENV/bin/torchrun" --standalone --nproc_per_node "$NP" "$ROOT/bench/ddp_tta.py" \
    --data "$DATA" --target "$TARGET" --seed "$1" --val-split "$TTA_ON" --amp "$TTA_AMP" $DDP_RECIPE ${2:-} >"$log" 2>&1 ||
    { tail -5 "$log"; exit 1; }
  python3 - "$log" "$t0" "$(now)" <<'PY' | tee -a "$RESULTS"
import json, sys
r = json.loads([l for l in open(sys.argv[1]) if l.startswith('{"impl"')][-1])
print(json.dumps({"impl": r["impl"], "device": r["device"], "reached": r["reached"], "epochs": r["epochs"], "val_acc": r["val_acc"],
                  "test_acc": r["test_acc"], "wall_s": float(sys.argv[3]) - float(sys.argv[2])}))
PY
}
echo "time to $TTA_ON accuracy >= $TARGET, $JOB, $NP ranks, amp $TTA_AMP, $PAIRS interleaved pairs (seeds 1..$PAIRS; $(nproc) cores, $( (nvidia-smi -L 2>/dev/null || true) | wc -l) GPU(s), $(uname -n)); DDP script: $DDP_RECIPE"
for pair in $(seq "$PAIRS"); do run_lockstep "$pair"; run_ddp "$pair"; done
for n in $(seq "${TTA_DDP_CL:-0}"); do run_ddp "$n" --channels-last; done
python3 - "$RESULTS" "$TTA_ON" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"\n| | runs reaching target | wall s (median, min-max) | epochs | {sys.argv[2]} acc at stop | test acc (end) |")
print("|---|---|---|---|---|---|")
med = {}
for impl in ("lockstep", "ddp", "ddp-channels-last"):
    r = [x for x in rows if x["impl"] == impl]
    if not r:
        continue
    w = [x["wall_s"] for x in r]
    med[impl] = st.median(w)
    print(f"| {impl} | {sum(x['reached'] for x in r)}/{len(r)} | {med[impl]:.0f} ({min(w):.0f}-{max(w):.0f}) | "
          f"{'/'.join(str(x['epochs']) for x in r)} | {st.median(x['val_acc'] for x in r) * 100:.2f}% | "
          f"{st.median(x['test_acc'] for x in r) * 100:.2f}% |")
print(f"\nlockstep / DDP wall time to {sys.argv[2]} accuracy target: {med['lockstep'] / med['ddp']:.2f}x (target <= 0.5x)")
if "ddp-channels-last" in med:
    print(f"lockstep / DDP in channels-last: {med['lockstep'] / med['ddp-channels-last']:.2f}x")
PY
