#!/usr/bin/env bash
# Accuracy: jobs/fashion_mnist_long.ini (reference CNN, 30 epochs with horizontal flips,
# cosine) at 1, 2 and 4 ranks (4 oversubscribed on a 2-core machine), each rank's batch
# 64, same seed, lr scaled linearly with the world size (--lr 0.025 --lr-scaling linear:
# 0.025, 0.05 — the job's own lr at 2 ranks — and 0.1). Validation on the val split
# chooses the checkpoint; the test split is evaluated once at the end. Prints the test
# accuracy of each and the largest difference. Targets: >= 93% at 2 ranks, all within
# 0.5 pp of each other. About 12 (1 rank) + 7 (2) + 12 (4) minutes on 2 cores. Finished
# runs are reused (resume finds them complete), so a second invocation only prints.
#   bash bench/accuracy.sh [RUNS_DIR] [RANKS...]      (default runs/ 1 2 4)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${LOCKSTEP_BUILD:-$ROOT/build}
RUNS=${1:-$ROOT/runs}
shift || true
RANKS=${*:-1 2 4}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cd "$ROOT"
[ -f data/fashion-mnist/manifest.json ] || "$BUILD/lockstep" shard --input idx:/usr/share/datasets/fashion-mnist \
  --output data/fashion-mnist --shards 4 --name fashion-mnist >/dev/null
mkdir -p "$RUNS"
for np in $RANKS; do
  SECONDS=0
  mpirun -np "$np" "$BUILD/lockstep" train --config jobs/fashion_mnist_long.ini --run.dir "$RUNS/accuracy-np$np" \
    --lr 0.025 --lr-scaling linear > "$RUNS/accuracy-np$np.log" 2>&1 || { tail -5 "$RUNS/accuracy-np$np.log"; exit 1; }
  echo "$np rank(s): done in $SECONDS s ($RUNS/accuracy-np$np)"
done
python3 - "$RUNS" $RANKS <<'PY'
import json, sys
acc = {}
print("| ranks | global batch | lr | test accuracy | test macro-F1 | best val acc | steps | wall s |")
print("|---|---|---|---|---|---|---|---|")
for np in sys.argv[2:]:
    rows = [json.loads(l) for l in open(f"{sys.argv[1]}/accuracy-np{np}/metrics.jsonl")]
    e = [r for r in rows if r["kind"] == "end"][-1]
    best = max(r["val_acc"] for r in rows if r["kind"] == "epoch" and "val_acc" in r)
    acc[np] = e["test_acc"] * 100
    print(f"| {np} | {e['global_batch']} | {0.025 * int(np):g} | {acc[np]:.2f}% | {e['test_f1'] * 100:.2f}% | "
          f"{best * 100:.2f}% | {e['step']} | {e['seconds']:.0f} |")
if "2" in acc:
    print(f"\n2 ranks: {acc['2']:.2f}%   target >= 93%: {'met' if acc['2'] >= 93 else 'MISSED'}")
spread = max(acc.values()) - min(acc.values())
print(f"largest difference: {spread:.2f} pp   target <= 0.5 pp: {'met' if spread <= 0.5 else 'MISSED'}")
PY
